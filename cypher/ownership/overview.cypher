// One user's memory at a glance (the memory page): its current memories, its entities by
// kind (the person's own node left out), and its last activity: the latest of a memory
// written, touched or corrected, and a conversation started, read or closed.
CALL () {
  OPTIONAL MATCH (:Entity {user_id: $user_id})-[r]->(:Entity {user_id: $user_id})
  WHERE r.user_id = $user_id
  RETURN count(CASE WHEN @current(r) THEN 1 END) AS memories,
         max(coalesce(r.corrected_at, r.touched_at)) AS memory_at
}
CALL () {
  OPTIONAL MATCH (n:Entity {user_id: $user_id})
  WHERE NOT coalesce(n.is_self, false)
  WITH n.kind AS kind, count(n) AS n WHERE kind IS NOT NULL
  RETURN collect({kind: kind, count: n}) AS kinds
}
CALL () {
  OPTIONAL MATCH (c:Conversation {user_id: $user_id})
  RETURN max(coalesce(c.closed_at, c.last_read_at, c.started_at)) AS conversation_at,
         count(CASE WHEN c.status = 'open' THEN 1 END) AS open_conversations
}
RETURN memories, kinds, open_conversations,
       toString(CASE WHEN conversation_at IS NULL OR memory_at > conversation_at THEN memory_at
                     ELSE conversation_at END) AS last_activity
