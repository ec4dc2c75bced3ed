// A conversation's read log: pending entries, entries applied before read logs were cleared at
// close (older stores), and how many reads its closes reinforced.
OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN coalesce(c.read_log, []) AS pending, coalesce(c.read_log_applied, []) AS applied,
       coalesce(c.reads_reinforced, 0) AS reinforced
