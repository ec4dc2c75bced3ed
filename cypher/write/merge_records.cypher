// What each merge absorbed, so a flagged merge can be inspected and undone (design §5).
UNWIND $rows AS row
CREATE (m:MergeRecord {user_id: $user_id, id: row.id})
SET m += row.props, m.created_at = $now
