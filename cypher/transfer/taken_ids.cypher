// Import, the check (design §11): which of the file's generated ids (entities, memories,
// merge records) another user's partition holds. Conversation ids are the client's own and
// are not compared. Staging partitions (ids starting $staging) are no user's.
UNWIND $entity_ids AS id
MATCH (n:Entity {id: id})
WHERE n.user_id <> $user_id AND NOT n.user_id STARTS WITH $staging
RETURN DISTINCT id
UNION
UNWIND $memory_ids AS id
MATCH (s:Snippet {edge_id: id})
WHERE s.user_id <> $user_id AND NOT s.user_id STARTS WITH $staging
RETURN DISTINCT id
UNION
UNWIND $merge_record_ids AS id
MATCH (m:MergeRecord {id: id})
WHERE m.user_id <> $user_id AND NOT m.user_id STARTS WITH $staging
RETURN DISTINCT id
