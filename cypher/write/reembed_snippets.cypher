// Snippets embedded again by the running embedder.
UNWIND $rows AS row
MATCH (s:Snippet {user_id: row.user_id, id: row.id})
SET s.embedding_f32 = row.packed, s.embedding = row.vector
