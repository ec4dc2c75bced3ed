// The history of one relation of one entity: which target was current when, newest first.
// :param user_id => 'demo'
// :param name => 'Bill'
// :param relation => 'WORKS_AT'
MATCH (a:Entity {user_id: $user_id, name: $name})-[r]->(b:Entity {user_id: $user_id})
WHERE type(r) = $relation
RETURN b.name AS target, r.created_at AS since, r.superseded_at AS until,
       r.superseded_at IS NULL AS current, r.snippet AS snippet
ORDER BY coalesce(r.superseded_at, datetime('9999-12-31T00:00:00Z')) DESC
