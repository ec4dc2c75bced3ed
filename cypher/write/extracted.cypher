// A conversation of the backlog was extracted (or had been committed already): it leaves the
// backlog, and its turns' retention counts from now (maintenance/purge_turns).
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
REMOVE c.awaiting_extraction, c.extraction_note, c.awaiting_since, c.extraction_lease_until
SET c.extracted_at = $now
RETURN c.id AS id
