// What a commit checks of its conversation: its status, the hash of the batch that committed
// it, and how many of its recorded turns are consolidated (`extracted_turns`; a conversation
// committed whole before turns were counted has consolidated them all).
OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN c IS NOT NULL AS exists, c.status AS status, c.batch_hash AS batch_hash,
       c.read_log AS read_log,
       c.closed_at AS closed_at,
       coalesce(c.extracted_turns, CASE WHEN c.batch_hash IS NOT NULL
                                        THEN size(coalesce(c.turns, [])) ELSE 0 END)
         AS extracted_turns
