// The model this user's most recently active conversation held through the proxy used: what
// extracts their conversations recorded without the proxy (hooks, plugins, /v1/memory/turns)
// when PEGASUS_LLM_MODEL is not set (design §8, "Which model extracts").
OPTIONAL MATCH (c:Conversation {user_id: $user_id}) WHERE c.model IS NOT NULL
WITH c ORDER BY c.last_active_at DESC LIMIT 1
RETURN c.model AS model
