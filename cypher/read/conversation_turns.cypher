// A conversation's recorded turns and status (the proxy's transcript).
OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN c IS NOT NULL AS exists, c.status AS status, coalesce(c.turns, []) AS turns
