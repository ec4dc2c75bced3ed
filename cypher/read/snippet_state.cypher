// The words now on the given edges, and the words their :Snippet nodes hold (null: none yet).
UNWIND $rows AS row
MATCH (:Entity {user_id: $user_id, id: row.source_id})-[r]->(:Entity {user_id: $user_id})
WHERE r.id = row.edge_id AND r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
RETURN r.id AS id, row.source_id AS source_id, r.snippet AS snippet, s.text AS stored
