// A close is accepted: the conversation is marked `closing` in the graph, so the request
// outlives the server; a worker then extracts and reinforces it (design §9). A conversation
// already closed, or already closing, is left as it is; a failed one is tried afresh. A
// conversation that was never recorded is not made up: no row (the caller says 404).
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
WITH c, c.status AS was
FOREACH (_ IN CASE WHEN was IN ['open', 'failed'] THEN [1] ELSE [] END |
  SET c.status = 'closing', c.close_requested_at = $now, c.close_attempts = 0,
      c.close_next_at = $now, c.close_error = null, c.close_lease_until = null,
      c.close_holder = null)
RETURN was, c.status AS status
