// The entities a reference names: the one whose id it is, else those whose name or alias folds
// to it (through their seed keys), with how many memories each has (to tell them apart).
CALL () {
  MATCH (n:Entity {user_id: $user_id, id: $ref})
  RETURN n
  UNION
  MATCH (k:Key {user_id: $user_id, kind: 'entity'})
  WHERE k.id = 'e:' + k.entity_id + ':' + $folded
  MATCH (n:Entity {user_id: $user_id, id: k.entity_id})
  RETURN n
}
RETURN n.id AS id, n.name AS name, n.kind AS kind, coalesce(n.is_self, false) AS is_self,
       COUNT { (n)-[r]-(:Entity) WHERE r.user_id = $user_id } AS memories
ORDER BY n.id = $ref DESC, n.name, n.id
