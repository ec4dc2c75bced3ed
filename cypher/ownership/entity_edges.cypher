// Every memory edge at one entity, in either direction ({edge_id, source_id, target_id}).
MATCH (n:Entity {user_id: $user_id, id: $entity_id})-[r]-(:Entity {user_id: $user_id})
WHERE r.user_id = $user_id
RETURN DISTINCT r.id AS edge_id, startNode(r).id AS source_id, endNode(r).id AS target_id
