// Closing a conversation: its read log has been applied, so it is cleared (design §10: what a
// conversation read is not kept past its use); only the count of reinforced reads stays.
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.read_log = []
SET c.reads_reinforced = coalesce(c.reads_reinforced, 0) + $reinforced,
    c.read_log = [], c.closed_at = $now, c.ended_at = coalesce(c.ended_at, $now),
    c.status = 'closed'
REMOVE c.read_log_applied, c.close_lease_until, c.close_holder
