// Forget everything, step 3: every node of the user (entities, keys, snippets, passages,
// conversations,
// merge records: each label through its user_id index; a migration's few marks by label), in
// batches. The Partition goes last, in step 4, which also ends the erasure.
CALL () {
  MATCH (n:Snippet {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:SnippetBackfill {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Key {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Passage {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Conversation {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:MergeRecord {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Entity {user_id: $user_id}) RETURN n
}
CALL (n) {
  DETACH DELETE n
} IN TRANSACTIONS OF $batch ROWS
