// Export, one page of the user's entities after $after (by id: the (user_id, id) constraint
// serves the order, so a page costs its size, never the partition's).
MATCH (n:Entity {user_id: $user_id})
WHERE n.id > $after
RETURN n.id AS id, n.name AS name, n.kind AS kind, coalesce(n.aliases, []) AS aliases,
       [k IN keys(n) WHERE k STARTS WITH 'p_' | [substring(k, 2), n[k]]] AS properties,
       n.confidence AS confidence, coalesce(n.conversations, []) AS conversations,
       coalesce(n.provisional, false) AS provisional, coalesce(n.is_self, false) AS is_self,
       n.created_at AS created_at, n.updated_at AS updated_at
ORDER BY n.id
LIMIT $limit
