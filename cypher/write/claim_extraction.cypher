// Claim one awaiting conversation's extraction for a worker (several servers, or a server and
// `pegasus extract --pending`, may work the backlog at once): taken under the node's write
// lock like a close's claim (write/claim_close), so each conversation is extracted once. A
// lease outlives a crashed holder by at most $lease_s.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
SET c.extraction_claim_lock = true
REMOVE c.extraction_claim_lock
WITH c
WITH c, c.awaiting_extraction = true
        AND (c.extraction_lease_until IS NULL OR c.extraction_lease_until < $now) AS free
SET c.extraction_lease_until = CASE WHEN free THEN $now + duration({seconds: $lease_s})
                                    ELSE c.extraction_lease_until END
RETURN free AS claimed
