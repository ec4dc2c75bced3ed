OPTIONAL MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
RETURN c.status AS status, c.batch_hash AS batch_hash, c.read_log AS read_log,
       c.closed_at AS closed_at
