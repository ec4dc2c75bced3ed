// Import with replace, the swap: the user's memory goes, inside the swap's transaction (so a
// failure anywhere before its commit leaves it whole). Edges go with their entities; the
// passages of recorded turns (design §7.11) go with the conversations they quote.
CALL () {
  MATCH (n:Snippet {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:SnippetBackfill {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Key {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Conversation {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Passage {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:MergeRecord {user_id: $user_id}) RETURN n
  UNION ALL
  MATCH (n:Entity {user_id: $user_id}) RETURN n
}
DETACH DELETE n
