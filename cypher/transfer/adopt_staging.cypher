// Import, the swap (same transaction as the lock): every memory edge and node of the staging
// partition moves to the user id, the snippets to the user's full-text token.
CALL () {
  MATCH (:Entity {user_id: $staging_id})-[r]->()
  WHERE r.user_id = $staging_id
  SET r.user_id = $user_id
}
CALL () {
  MATCH (n:Snippet {user_id: $staging_id}) SET n.user_key = $user_key RETURN n
  UNION ALL
  MATCH (n:Key {user_id: $staging_id}) RETURN n
  UNION ALL
  MATCH (n:Conversation {user_id: $staging_id}) RETURN n
  UNION ALL
  MATCH (n:MergeRecord {user_id: $staging_id}) RETURN n
  UNION ALL
  MATCH (n:Entity {user_id: $staging_id}) RETURN n
}
SET n.user_id = $user_id
