// Every seed key of one user with its raw embedding: the exact oracle that the index search
// is checked against (tests, benchmarks/seed_agreement.py), and what re-centring reads.
// The packed float32 copy when there is one; the float list only for keys written before it.
MATCH (k:Key {user_id: $user_id})
RETURN k.id AS id, k.kind AS kind, k.entity_id AS entity_id, k.label AS label,
       k.embedding_f32 AS packed,
       CASE WHEN k.embedding_f32 IS NULL THEN k.embedding END AS embedding
