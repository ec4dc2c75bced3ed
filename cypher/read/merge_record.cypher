MATCH (m:MergeRecord {user_id: $user_id, id: $record_id})
OPTIONAL MATCH (n:Entity {user_id: $user_id, id: m.survivor_id})
RETURN properties(m) AS record, n IS NOT NULL AS survivor_exists
