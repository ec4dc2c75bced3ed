// Merge records V0011 marked for `write.merge_records.upgrade_stored`, a batch at a time.
MATCH (m:MergeRecordToUpgrade)
RETURN m.user_id AS user_id, m.id AS id, properties(m) AS record
LIMIT $limit
