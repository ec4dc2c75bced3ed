// Every key, a batch at a time in (user_id, id) order after the given one, for embedding all
// keys again (pegasus.embedding.vectors.reembed).
MATCH (k:Key)
WHERE k.user_id > $user_id OR (k.user_id = $user_id AND k.id > $id)
RETURN k.user_id AS user_id, k.id AS id, k.kind AS kind, k.text AS text, k.label AS label
ORDER BY user_id, id
LIMIT $batch
