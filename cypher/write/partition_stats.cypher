// The mean of the user's key vectors, for centring (design §7.3); recomputed, never drifted.
MATCH (p:Partition {user_id: $user_id})
OPTIONAL MATCH (k:Key {user_id: $user_id})
WITH p, collect(k.embedding) AS vectors
WITH p, vectors, size(vectors) AS n
SET p.key_count = n,
    p.key_mean = CASE WHEN n = 0 THEN null ELSE
      [i IN range(0, size(vectors[0]) - 1) | reduce(total = 0.0, v IN vectors | total + v[i]) / n]
    END,
    p.self_id = coalesce($self_id, p.self_id),
    p.version = coalesce(p.version, 0) + 1,
    p.updated_at = $now
RETURN p.key_count AS key_count, p.version AS version
