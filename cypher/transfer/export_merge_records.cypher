// Export, one page of the user's merge records after $after.
MATCH (m:MergeRecord {user_id: $user_id})
WHERE m.id > $after
RETURN m.id AS id, properties(m) AS props
ORDER BY m.id
LIMIT $limit
