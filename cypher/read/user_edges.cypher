// Every memory edge of one user, current or not, with its strength and state (notebooks, API).
MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
WHERE r.user_id = $user_id
RETURN r.id AS id, a.id AS source_id, a.name AS source, type(r) AS relation, b.id AS target_id,
       b.name AS target, r.strength AS strength, r.strength_at_touch AS strength_at_touch,
       toString(r.touched_at) AS touched_at, r.stability AS stability,
       r.cardinality AS cardinality, coalesce(r.dormant, false) AS dormant,
       r.superseded_at IS NOT NULL AS superseded, coalesce(r.expired, false) AS expired,
       r.snippet AS snippet, r.conversations AS conversations
ORDER BY source, relation, target
