// The model the most recently active recorded conversation used (any user's; only the model's
// name leaves the query): what `pegasus doctor` calls when PEGASUS_LLM_MODEL is not set.
OPTIONAL MATCH (c:Conversation) WHERE c.model IS NOT NULL
WITH c ORDER BY c.last_active_at DESC LIMIT 1
RETURN c.model AS model
