MATCH (m:MergeRecord {user_id: $user_id, id: $record_id})
SET m.status = 'undone', m.undone_at = $now, m.restored_id = $restored_id
