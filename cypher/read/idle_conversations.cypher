// One user's recorded conversations still open and unused since $before (to close them).
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'open' AND c.last_active_at < $before
RETURN c.id AS id
ORDER BY c.last_active_at
