// The ends of each of a user's edges, so later writes can reach them through an index.
MATCH (s:Entity {user_id: $user_id})-[r]->(t:Entity)
WHERE r.id IN $edge_ids AND r.user_id = $user_id
RETURN s.id AS source_id, t.id AS target_id, r.id AS id
