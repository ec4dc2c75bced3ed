// One :Snippet node per memory edge whose words are new or changed (id = the edge's id);
// `said_at` is when the words shown for the edge were said (the commit that brought them). It
// names its edge and both of its ends, so recall finds the edge between them without scanning
// a hub's edges. `embedding` is the packed vector as a list, for the snippet_meaning index.
UNWIND $rows AS row
MERGE (s:Snippet {user_id: $user_id, id: row.id})
SET s.edge_id = row.id, s.source_id = row.source_id, s.target_id = row.target_id,
    s.text = row.text, s.user_key = $user_key, s.embedding_f32 = row.packed,
    s.embedding = row.vector, s.said_at = $now, s.conversation_id = $conversation_id
