// Every seed key of one user (exact scoring for partitions up to exact_scan_max_keys).
// The packed float32 copy when there is one; the float list only for keys written before it.
MATCH (k:Key {user_id: $user_id})
RETURN k.id AS id, k.kind AS kind, k.entity_id AS entity_id, k.label AS label,
       k.embedding_f32 AS packed,
       CASE WHEN k.embedding_f32 IS NULL THEN k.embedding END AS embedding
