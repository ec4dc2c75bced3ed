// A superseded edge observed again becomes current again (design §6).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id})-[r]->(:Entity)
WHERE r.id = row.edge_id AND r.user_id = $user_id
REMOVE r.superseded_at, r.superseded_by, r.superseded_in
