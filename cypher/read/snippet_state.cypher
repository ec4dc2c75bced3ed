// The words now on the given edges, and the words their :Snippet nodes hold (null: none yet).
// Rows name both ends of the edge ({source_id, target_id, edge_id}).
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
RETURN r.id AS id, row.source_id AS source_id, row.target_id AS target_id,
       r.snippet AS snippet, s.text AS stored
