// The conversation record, linked to every entity it mentions.
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.read_log = []
SET c.summary = $summary, c.importance = $importance, c.tags = $tags,
    c.status = CASE WHEN c.status IN ['closed', 'closing'] THEN c.status ELSE 'committed' END,
    c.batch_hash = $batch_hash, c.committed_at = $now,
    c.ended_at = coalesce(c.ended_at, $now)
WITH c
UNWIND $entity_ids AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
MERGE (c)-[:MENTIONS]->(n)
