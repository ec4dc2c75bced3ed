// A close that found no LLM to extract with (design §3, "Which model extracts"): the
// conversation is marked awaiting extraction, so its turns outlive retention until it is
// extracted or forgotten, and the backlog finds it once an LLM is configured.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
SET c.awaiting_extraction = true, c.extraction_note = $why, c.awaiting_since = $now
RETURN c.id AS id
