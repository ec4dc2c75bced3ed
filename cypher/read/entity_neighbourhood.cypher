// The current edges around one entity at $now, strongest first (context for the merge
// reviewer).
MATCH (n:Entity {user_id: $user_id, id: $entity_id})-[r]-(m:Entity {user_id: $user_id})
WHERE @current(r)
WITH r, startNode(r) AS s, endNode(r) AS t
ORDER BY r.strength DESC
LIMIT $limit
RETURN s.name AS source, type(r) AS label, t.name AS target
