// Snippets without the list vector the snippet_meaning index holds (written before V0012): a
// batch at a time, for Store.index_snippets, which sets it from the packed vector.
MATCH (s:Snippet)
WHERE s.embedding IS NULL AND s.embedding_f32 IS NOT NULL
RETURN s.user_id AS user_id, s.id AS id, s.embedding_f32 AS packed
LIMIT $batch
