// What one conversation mentioned, and the current memories among those entities.
// :param user_id => 'demo'
// :param conversation_id => 'demo-offer'
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})-[:MENTIONS]->(n:Entity)
OPTIONAL MATCH (n)-[r]-(m:Entity {user_id: $user_id})
WHERE r.superseded_at IS NULL AND NOT coalesce(r.dormant, false) AND r.retracted_at IS NULL
RETURN c, n, r, m
