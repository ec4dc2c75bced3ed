// Import, a batch of merge records as they were exported.
UNWIND $rows AS row
CREATE (m:MergeRecord {user_id: $user_id, id: row.id})
SET m += row.props
