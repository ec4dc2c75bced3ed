// Memories that went dormant or lost strength since they were last touched over a month ago.
// :param user_id => 'demo'
MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
WHERE r.touched_at < datetime() - duration('P30D') AND r.superseded_at IS NULL
RETURN a.name AS source, type(r) AS relation, b.name AS target, round(r.strength, 2) AS strength,
       r.dormant AS dormant, r.touched_at AS last_touched, r.snippet AS snippet
ORDER BY r.strength ASC
