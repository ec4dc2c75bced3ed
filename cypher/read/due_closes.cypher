// One user's conversations waiting to be closed whose next attempt is due.
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'closing' AND c.close_next_at <= $now
RETURN c.id AS id
ORDER BY c.close_next_at
