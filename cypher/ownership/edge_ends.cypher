// Where the given memories are ({edge_id, source_id, target_id}), found through their
// :Snippet nodes (by the (user_id, id) constraint: an edge's snippet has the edge's id and
// names both its ends), so no edge is looked for by scanning. Ids not found are left out.
UNWIND $edge_ids AS edge_id
MATCH (s:Snippet {user_id: $user_id, id: edge_id})
MATCH (a:Entity {user_id: $user_id, id: s.source_id}),
      (b:Entity {user_id: $user_id, id: s.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = edge_id AND r.user_id = $user_id
RETURN r.id AS edge_id, a.id AS source_id, b.id AS target_id
