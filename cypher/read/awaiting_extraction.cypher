// The backlog: closed conversations awaiting extraction (every user's, or one user's), in the
// order they closed, with the model each used (null when it was not recorded through the proxy).
MATCH (c:Conversation)
WHERE ($user_id IS NULL OR c.user_id = $user_id) AND c.awaiting_extraction = true
  AND c.status = 'closed'
RETURN c.user_id AS user_id, c.id AS id, c.model AS model
ORDER BY c.closed_at, c.user_id, c.id
