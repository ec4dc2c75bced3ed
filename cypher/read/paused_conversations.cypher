// One user's recorded conversations still open, quiet since $before, with user turns not
// consolidated yet (design §9, "Consolidated during the session"): they are extracted while
// they stay open. $except_id: a conversation to leave out (the one just opened).
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'open' AND c.last_active_at <= $before AND c.id <> coalesce($except_id, '')
WITH c, coalesce(c.turns, []) AS turns, coalesce(c.extracted_turns, 0) AS done
WHERE size(turns) > done
  AND any(t IN turns[done..] WHERE t STARTS WITH '{"role": "user"')
RETURN c.id AS id
ORDER BY c.last_active_at
LIMIT $limit
