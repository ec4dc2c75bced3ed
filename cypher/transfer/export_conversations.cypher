// Export, one page of the user's conversations after $after, with the entities they mention.
MATCH (c:Conversation {user_id: $user_id})
WHERE c.id > $after
WITH c ORDER BY c.id LIMIT $limit
RETURN c.id AS id, properties(c) AS props,
       COLLECT { MATCH (c)-[:MENTIONS]->(n:Entity) RETURN n.id ORDER BY n.id } AS mentions
ORDER BY c.id
