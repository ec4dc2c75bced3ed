// Stale keys (design §2): an entity key whose entity is gone or no longer has that surface form;
// a relation key whose label is on no current edge of this user.
MATCH (k:Key {user_id: $user_id})
OPTIONAL MATCH (n:Entity {user_id: $user_id, id: k.entity_id})
WITH k, n
WHERE (k.kind = 'entity' AND (n IS NULL OR NOT k.text IN [n.name] + coalesce(n.aliases, [])))
   OR (k.kind = 'relation' AND NOT EXISTS {
         MATCH (:Entity {user_id: $user_id})-[r]->(:Entity)
         WHERE type(r) = k.label AND r.user_id = $user_id AND r.superseded_at IS NULL
       })
DETACH DELETE k
RETURN count(*) AS dropped
