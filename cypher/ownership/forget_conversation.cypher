// Erase a conversation's own node: its summary, tags, recorded turns and read logs, and the
// passages of its turns (design §7.11).
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
CALL (c) {
  MATCH (p:Passage {user_id: $user_id, conversation_id: $conversation_id})
  DETACH DELETE p
}
DETACH DELETE c
RETURN count(*) AS forgotten
