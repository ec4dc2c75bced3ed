// The only write a recall makes: which edges it used, logged on the conversation (design §7.10).
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.status = 'open', c.read_log = []
SET c.read_log = coalesce(c.read_log, []) + $entries, c.last_read_at = $now
