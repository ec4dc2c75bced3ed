// The user's entities as merge compares them: all of them (`$ids` null, a commit's snapshot,
// oldest first), or only those named (undo).
MATCH (n:Entity {user_id: $user_id})
WHERE $ids IS NULL OR n.id IN $ids
RETURN n.id AS id, n.name AS name, n.kind AS kind, coalesce(n.aliases, []) AS aliases,
       coalesce(n.is_self, false) AS is_self, n.confidence AS confidence,
       coalesce(n.provisional, false) AS provisional,
       coalesce(n.conversations, []) AS conversations,
       [k IN keys(n) WHERE k STARTS WITH 'p_' | [substring(k, 2), n[k]]] AS properties,
       n.created_at AS created_at
ORDER BY n.created_at, n.name, n.id
