OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN coalesce(c.read_log, []) AS pending, coalesce(c.read_log_applied, []) AS applied
