// The proxy records each exchange on its conversation as it happens (JSON text per turn),
// so extraction at close has the whole transcript. A turn equal to the last one recorded is
// not recorded twice (a client retrying after an upstream failure resends it).
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.status = 'open', c.read_log = [], c.source = 'proxy'
WITH c, coalesce(c.turns, []) AS had
SET c.turns = had + CASE WHEN size(had) > 0 AND last(had) = head($turns) THEN tail($turns)
                         ELSE $turns END,
    c.last_active_at = $now
RETURN size(c.turns) AS turns
