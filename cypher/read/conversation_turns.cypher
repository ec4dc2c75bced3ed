// A conversation's recorded turns and status (its transcript, and whether it was committed).
OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN c IS NOT NULL AS exists, c.status AS status, coalesce(c.turns, []) AS turns,
       c.batch_hash IS NOT NULL AS committed, coalesce(c.close_attempts, 0) AS close_attempts,
       c.close_error AS close_error, c.model AS model,
       coalesce(c.awaiting_extraction, false) AS awaiting_extraction,
       coalesce(c.extracted_turns, CASE WHEN c.batch_hash IS NOT NULL
                                        THEN size(coalesce(c.turns, [])) ELSE 0 END)
         AS extracted_turns, c.last_active_at AS last_active_at
