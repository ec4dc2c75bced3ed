// Import, a batch of checked conversations, each field named, linked to the entities they
// mention.
UNWIND $rows AS row
CREATE (c:Conversation {user_id: $user_id, id: row.id})
SET c.status = row.status, c.summary = row.summary, c.importance = row.importance,
    c.tags = row.tags, c.source = row.source, c.batch_hash = row.batch_hash,
    c.started_at = row.started_at, c.ended_at = row.ended_at,
    c.committed_at = row.committed_at, c.closed_at = row.closed_at,
    c.read_log = row.read_log, c.reads_reinforced = row.reads_reinforced, c.turns = row.turns
WITH c, row
UNWIND row.mentions AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
CREATE (c)-[:MENTIONS]->(n)
