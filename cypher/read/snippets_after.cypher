// Every snippet, a batch at a time in (user_id, id) order after the given one, for embedding
// all snippets again (pegasus.embedding.vectors.reembed).
MATCH (s:Snippet)
WHERE s.user_id > $user_id OR (s.user_id = $user_id AND s.id > $id)
RETURN s.user_id AS user_id, s.id AS id, s.text AS text
ORDER BY user_id, id
LIMIT $batch
