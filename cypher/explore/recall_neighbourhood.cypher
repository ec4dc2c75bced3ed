// The neighbourhood the recalls of one conversation fired: every edge its reads logged
// (pending and already applied at close), with both ends.
// :param user_id => 'demo'
// :param conversation_id => 'demo-chat'
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
UNWIND coalesce(c.read_log, []) + coalesce(c.read_log_applied, []) AS entry
WITH DISTINCT split(entry, '/')[1] AS edge_id
MATCH (a:Entity {user_id: $user_id})-[r {id: edge_id}]->(b:Entity {user_id: $user_id})
RETURN a, r, b
