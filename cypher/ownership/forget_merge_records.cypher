// Erase the merge records that name any of the given entities (survivor, restored node or
// review candidate) or come from any of the given conversations: they hold names and
// properties.
MATCH (m:MergeRecord {user_id: $user_id})
WHERE m.survivor_id IN $entity_ids OR m.restored_id IN $entity_ids
   OR any(c IN coalesce(m.candidate_ids, []) WHERE c IN $entity_ids)
   OR m.conversation_id IN $conversation_ids
DETACH DELETE m
RETURN count(*) AS forgotten
