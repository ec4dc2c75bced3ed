// The conversation record, linked to every entity it mentions. A commit of a part of a
// recorded transcript ($segment: the turns up to $extracted_turns, design §9, "Consolidated
// during the session") leaves the conversation's status as it is (an open conversation goes on)
// and keeps the summary when the part brought none; a commit of the whole conversation
// ($extracted_turns null) consolidates every recorded turn. The passages of the consolidated
// turns go: their words are memories now (design §7.11).
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.read_log = []
SET c.summary = CASE WHEN $segment AND coalesce($summary, '') = '' THEN c.summary
                     ELSE $summary END,
    c.importance = CASE WHEN $segment AND coalesce($summary, '') = '' THEN c.importance
                        ELSE $importance END,
    c.tags = CASE WHEN $segment AND size(coalesce($tags, [])) = 0 THEN c.tags ELSE $tags END,
    c.status = CASE WHEN c.status IN ['closed', 'closing'] THEN c.status
                    WHEN $segment AND c.status IS NOT NULL THEN c.status
                    ELSE 'committed' END,
    c.batch_hash = $batch_hash, c.committed_at = $now,
    c.extracted_turns = coalesce($extracted_turns, size(coalesce(c.turns, []))),
    c.ended_at = CASE WHEN $segment THEN c.ended_at ELSE coalesce(c.ended_at, $now) END
WITH c
CALL (c) {
  MATCH (p:Passage {user_id: $user_id, conversation_id: $conversation_id})
  WHERE p.turn < c.extracted_turns
  DETACH DELETE p
}
WITH c
UNWIND $entity_ids AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
MERGE (c)-[:MENTIONS]->(n)
