// Claim a conversation's close for one worker (design §13): several servers share a database,
// and each one's sweep finds the same due closes. The node's write lock is taken first (the
// SET), so the status and lease read after it are the last committed ones: of two workers,
// the second sees the first's lease and backs off. A lease outlives a crashed holder by at
// most $lease_s; another server's sweep then takes the close over.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
SET c.close_claim_lock = true
REMOVE c.close_claim_lock
WITH c
WITH c, c.status = 'closing' AND (c.close_lease_until IS NULL OR c.close_lease_until < $now)
        AS free
SET c.close_holder = CASE WHEN free THEN $holder ELSE c.close_holder END,
    c.close_lease_until = CASE WHEN free THEN $now + duration({seconds: $lease_s})
                               ELSE c.close_lease_until END
RETURN free AS claimed
