// Import, a batch of memory edges with every exported property, and their :Snippet nodes
// (words, when and where they were said, the embedding computed anew).
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
CREATE (a)-[r:$(row.relation)]->(b)
SET r = row.props, r.user_id = $user_id
CREATE (s:Snippet {user_id: $user_id, id: row.props.id})
SET s.edge_id = row.props.id, s.source_id = row.source_id, s.target_id = row.target_id,
    s.text = row.props.snippet, s.user_key = $user_key, s.embedding_f32 = row.packed, s.said_at = row.said_at,
    s.conversation_id = row.said_in
