// A close attempt failed: count it, keep the error, and wait before the next one ($next_at,
// a backoff). After $max_attempts the conversation is `failed`: its turns stay recorded, and
// a new close request tries again from the start.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
WHERE c.status = 'closing'
WITH c, coalesce(c.close_attempts, 0) + 1 AS attempts
SET c.close_attempts = attempts, c.close_error = $error, c.close_next_at = $next_at,
    c.close_lease_until = null, c.close_holder = null,
    c.status = CASE WHEN attempts >= $max_attempts THEN 'failed' ELSE 'closing' END
RETURN c.status AS status, attempts
