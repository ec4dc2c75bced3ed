// Keys not yet centred on the current centre (written before V0006, or under another model's
// centre): a batch at a time, for Store.centre_keys.
MATCH (k:Key)
WHERE k.centre_id IS NULL OR k.centre_id <> $centre_id
RETURN k.user_id AS user_id, k.id AS id, k.embedding_f32 AS packed,
       CASE WHEN k.embedding_f32 IS NULL THEN k.embedding END AS embedding
LIMIT $batch
