// Every entity of one user, as merge compares them.
MATCH (n:Entity {user_id: $user_id})
RETURN n.id AS id, n.name AS name, n.kind AS kind, coalesce(n.aliases, []) AS aliases,
       coalesce(n.is_self, false) AS is_self, n.confidence AS confidence,
       coalesce(n.provisional, false) AS provisional,
       coalesce(n.conversations, []) AS conversations,
       [k IN keys(n) WHERE k STARTS WITH 'p_' | [substring(k, 2), n[k]]] AS properties
ORDER BY n.created_at, n.name, n.id
