// Export, the memory edges leaving the given entities, every property, with where and when
// their shown words were said (their :Snippet), ordered by edge id.
UNWIND $entity_ids AS entity_id
MATCH (a:Entity {user_id: $user_id, id: entity_id})-[r]->(b:Entity {user_id: $user_id})
WHERE r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
RETURN a.id AS source_id, type(r) AS relation, b.id AS target_id, properties(r) AS props,
       s.said_at AS said_at, s.conversation_id AS said_in
ORDER BY r.id
