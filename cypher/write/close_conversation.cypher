// Closing a conversation: the read log has been applied; keep it as provenance.
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.read_log = []
SET c.read_log_applied = coalesce(c.read_log_applied, []) + coalesce(c.read_log, []),
    c.read_log = [], c.closed_at = $now, c.ended_at = coalesce(c.ended_at, $now),
    c.status = 'closed'
