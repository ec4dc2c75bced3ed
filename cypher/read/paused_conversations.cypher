// One user's recorded conversations still open with user turns not consolidated yet (design §9,
// "Consolidated during the session"): they are extracted while they stay open. Quiet since
// $before when those turns hold at least $min_chars characters; a smaller part waits until
// the conversation is quiet since $small_before (each extraction costs a call's fixed part, and
// a small part is recallable as it was said meanwhile). $except_id: a conversation to leave
// out (the one just opened).
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'open' AND c.last_active_at <= $before AND c.id <> coalesce($except_id, '')
WITH c, coalesce(c.turns, []) AS turns, coalesce(c.extracted_turns, 0) AS done
WITH c, [t IN turns[done..] WHERE t STARTS WITH '{"role": "user"'] AS said
WHERE size(said) > 0
  AND (c.last_active_at <= $small_before
       OR reduce(n = 0, t IN said | n + size(t)) >= $min_chars)
RETURN c.id AS id
ORDER BY c.last_active_at
LIMIT $limit
