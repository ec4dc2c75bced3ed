// Entities of one user whose name or alias folds to $folded (through their seed keys), each
// with its strongest current edges at $now.
MATCH (k:Key {user_id: $user_id, kind: 'entity'})
WHERE k.id = 'e:' + k.entity_id + ':' + $folded
MATCH (n:Entity {user_id: $user_id, id: k.entity_id})
WITH DISTINCT n
CALL (n) {
  MATCH (n)-[r]-(:Entity {user_id: $user_id})
  WHERE @current(r)
  WITH r ORDER BY r.strength DESC LIMIT $limit
  RETURN collect({source: startNode(r).name, relation: type(r), target: endNode(r).name,
                  strength: r.strength, snippet: r.snippet}) AS edges
}
RETURN n.id AS id, n.name AS name, n.kind AS kind, coalesce(n.aliases, []) AS aliases,
       n.confidence AS confidence, coalesce(n.provisional, false) AS provisional,
       coalesce(n.is_self, false) AS is_self, coalesce(n.conversations, []) AS conversations,
       [p IN keys(n) WHERE p STARTS WITH 'p_' | [substring(p, 2), n[p]]] AS properties, edges
ORDER BY n.name
