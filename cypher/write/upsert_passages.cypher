// The passages of freshly recorded user turns (docs/design.md §7.11): $rows [{id, turn, text,
// vector}], `id` unique per user (the conversation, the turn, the passage's place in it).
// A turn already consolidated (below the conversation's `extracted_turns`) gets none: its words
// are in the graph.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
UNWIND $rows AS row
WITH c, row WHERE row.turn >= coalesce(c.extracted_turns, 0)
MERGE (p:Passage {user_id: $user_id, id: row.id})
SET p.conversation_id = $conversation_id, p.turn = row.turn, p.text = row.text,
    p.said_at = $now, p.embedding = row.vector, p.user_key = $user_key,
    p.conversation_key = $conversation_key
RETURN count(p) AS written
