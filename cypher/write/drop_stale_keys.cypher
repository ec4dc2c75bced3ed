// Stale keys (design §2): an entity key whose entity is gone or no longer has that surface form;
// a relation key whose label is on no current edge of this user. One branch per kind of key:
// with OR, the planner ran the relation test (an expand of the user's edges) for entity keys too.
// Plain Cypher 5: the upgrade test still writes through it on a 5.26 server.
MATCH (k:Key {user_id: $user_id})
WHERE CASE k.kind
  WHEN 'entity' THEN NOT EXISTS {
    MATCH (n:Entity {user_id: $user_id, id: k.entity_id})
    WHERE k.text IN [n.name] + coalesce(n.aliases, [])
  }
  WHEN 'relation' THEN NOT EXISTS {
    MATCH (:Entity {user_id: $user_id})-[r]->(:Entity)
    WHERE type(r) = k.label AND r.user_id = $user_id AND r.superseded_at IS NULL
  }
  ELSE false END
DETACH DELETE k
RETURN count(*) AS dropped
