// Erase a conversation's own node: its summary, tags, recorded turns and read logs.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
DETACH DELETE c
RETURN count(*) AS forgotten
