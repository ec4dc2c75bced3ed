// Retention of raw turns (design §10): a recorded conversation's turns are deleted once it was
// remembered (committed or closed) at least `turn_retention_days` ago ($before). Its memories,
// summary and tags stay; the transcript they came from does not.
MATCH (c:Conversation)
WHERE ($user_id IS NULL OR c.user_id = $user_id)
  AND c.status IN ['closed', 'committed'] AND size(coalesce(c.turns, [])) > 0
  AND coalesce(c.closed_at, c.committed_at) <= $before
SET c.turns = [], c.turn_ids = [], c.turns_purged_at = $now
RETURN count(c) AS purged
