// Erase memories ({edge_id, source_id, target_id}): the edge with every property, and its
// :Snippet (so its words leave the full-text index). The labels they had, for the stale-key
// check.
UNWIND $rows AS row
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: row.edge_id})
DETACH DELETE s
WITH row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
WITH r, type(r) AS label
DELETE r
RETURN collect(DISTINCT label) AS labels, count(*) AS forgotten
