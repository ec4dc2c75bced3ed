// Merges to inspect: flagged ones (and, when asked, pending review candidates), newest first.
MATCH (m:MergeRecord {user_id: $user_id})
WHERE m.status IN $statuses
RETURN m.id AS id, properties(m) AS record
ORDER BY m.created_at DESC, m.id
