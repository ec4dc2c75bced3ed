// The entities one conversation taught or cited, and the merges it made (which added its
// names and properties to stored entities).
CALL () {
  MATCH (n:Entity {user_id: $user_id})
  WHERE $conversation_id IN coalesce(n.conversations, [])
  RETURN n.id AS id
  UNION
  MATCH (:Conversation {user_id: $user_id, id: $conversation_id})-[:MENTIONS]->(n:Entity)
  RETURN n.id AS id
}
WITH collect(id) AS ids
RETURN ids, COLLECT {
  MATCH (m:MergeRecord {user_id: $user_id, conversation_id: $conversation_id})
  WHERE m.status IN ['merged', 'flagged']
  RETURN properties(m)
} AS merges
