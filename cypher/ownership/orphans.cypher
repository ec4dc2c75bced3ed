// Of the given entities, those left with no memory edge ($provisional_only: only provisional
// ones, made for an unknown end): nothing anyone said holds them any more. Never the self node.
UNWIND $entity_ids AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
WHERE (coalesce(n.provisional, false) OR NOT $provisional_only)
  AND NOT coalesce(n.is_self, false)
  AND NOT EXISTS { (n)-[r]-(:Entity) WHERE r.user_id = $user_id }
RETURN n.id AS id
