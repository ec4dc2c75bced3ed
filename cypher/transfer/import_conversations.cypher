// Import, a batch of checked conversations, each field named, linked to the entities they
// mention. A conversation that was closing on the exporting server (its close is that server's
// work, not in the file) is due to close here at once ($now), as a close requested now is.
UNWIND $rows AS row
CREATE (c:Conversation {user_id: $user_id, id: row.id})
SET c.status = row.status, c.summary = row.summary, c.importance = row.importance,
    c.tags = row.tags, c.source = row.source, c.batch_hash = row.batch_hash,
    c.started_at = row.started_at, c.ended_at = row.ended_at,
    c.committed_at = row.committed_at, c.closed_at = row.closed_at,
    c.read_log = row.read_log, c.reads_reinforced = row.reads_reinforced, c.turns = row.turns,
    c.extracted_turns = row.extracted_turns, c.awaiting_extraction = row.awaiting_extraction,
    c.last_active_at = row.last_active_at, c.last_read_at = row.last_read_at,
    c.extracted_at = row.extracted_at
FOREACH (_ IN CASE WHEN row.status = 'closing' THEN [1] ELSE [] END |
  SET c.close_requested_at = $now, c.close_next_at = $now, c.close_attempts = 0)
WITH c, row
UNWIND row.mentions AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
CREATE (c)-[:MENTIONS]->(n)
