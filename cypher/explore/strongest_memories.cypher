// A user's strongest current memories, with the words behind them.
// :param user_id => 'demo'
MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
WHERE r.superseded_at IS NULL AND NOT coalesce(r.dormant, false) AND r.retracted_at IS NULL
RETURN a, r, b
ORDER BY r.strength DESC
LIMIT 50
