// A superseded edge observed again becomes current again (design §6).
// Both ends are named, so the edge is found between them from the end with fewer edges
// (a hub such as the self node is never scanned).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id}),
      (t:Entity {user_id: $user_id, id: row.target_id})
MATCH (s)-[r]->(t)
WHERE r.id = row.edge_id AND r.user_id = $user_id
REMOVE r.superseded_at, r.superseded_by, r.superseded_in
