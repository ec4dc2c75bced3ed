// A marked merge record rewritten in the one shape (merge/records.py), the mark taken off.
// Its instants (made, undone) are the query's own and are kept as they are.
UNWIND $rows AS row
MATCH (m:MergeRecord {user_id: row.user_id, id: row.id})
WHERE m:MergeRecordToUpgrade
SET m += row.props
REMOVE m:MergeRecordToUpgrade
