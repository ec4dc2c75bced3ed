// The memories between two entities, whole (for a hand merge's record, which must be able to
// put them back): type, every property, direction, and where their words were said.
MATCH (a:Entity {user_id: $user_id, id: $a_id})-[r]-(b:Entity {user_id: $user_id, id: $b_id})
WHERE r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
RETURN DISTINCT r.id AS edge_id, startNode(r).id AS source_id, endNode(r).id AS target_id,
       type(r) AS label, properties(r) AS props, startNode(r) = a AS from_a,
       s.conversation_id AS said_in
