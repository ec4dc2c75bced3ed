// The self node's names: the words by which a message names the user.
MATCH (p:Partition {user_id: $user_id})
MATCH (n:Entity {user_id: $user_id, id: p.self_id})
RETURN n.id AS id, n.name AS name, coalesce(n.aliases, []) AS aliases
