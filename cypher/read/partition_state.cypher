// What a recall needs first: whether the user has keys, and the self node's names (the words
// that name the user, design §7.1); and for a commit, the partition's epoch and version.
MATCH (p:Partition {user_id: $user_id})
OPTIONAL MATCH (me:Entity {user_id: $user_id, id: p.self_id})
RETURN p.key_count AS key_count, p.self_id AS self_id, me.name AS self_name,
       coalesce(me.aliases, []) AS self_aliases, p.version AS version, p.epoch AS epoch
