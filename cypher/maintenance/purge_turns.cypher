// Retention of raw turns (design §10): a recorded conversation's turns are deleted once it was
// remembered (committed, closed, or extracted from the backlog) at least `turn_retention_days`
// ago ($before), and the passages of its turns with them (design §7.11). Its memories, summary and tags stay; the transcript they came from does not.
// A conversation awaiting extraction keeps its turns: they are all it has until an LLM
// extracts it (or the person forgets it).
MATCH (c:Conversation)
WHERE ($user_id IS NULL OR c.user_id = $user_id)
  AND c.status IN ['closed', 'committed'] AND size(coalesce(c.turns, [])) > 0
  AND c.awaiting_extraction IS NULL
  AND coalesce(c.extracted_at, c.closed_at, c.committed_at) <= $before
CALL (c) {
  MATCH (p:Passage {user_id: c.user_id, conversation_id: c.id})
  DETACH DELETE p
}
SET c.turns = [], c.turn_ids = [], c.turns_purged_at = $now
RETURN count(c) AS purged
