// Stale keys (design §2): an entity key whose entity is gone or no longer has that surface form;
// a relation key whose label is on no current edge of this user. Only the keys a write may have
// made stale are checked (`$key_ids`: the forms a changed entity lost, the labels whose edges it
// superseded), each found by the (user_id, id) index, so a commit costs its batch, not the
// partition. One branch per kind of key: with OR, the planner ran the relation test (an expand
// of the user's edges) for entity keys too.
UNWIND $key_ids AS key_id
MATCH (k:Key {user_id: $user_id, id: key_id})
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
