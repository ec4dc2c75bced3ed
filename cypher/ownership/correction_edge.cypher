// The memory a person corrects (design §10, "Correct in place"), found between its ends
// ({edge_id, source_id, target_id}): its label, every stored property, and its other end's kind.
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
RETURN type(r) AS label, properties(r) AS props, a.id AS source_id, a.name AS source,
       b.id AS target_id, b.name AS target, b.kind AS target_kind
