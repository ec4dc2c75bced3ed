MATCH (p:Partition {user_id: $user_id})
RETURN p.key_mean AS key_mean, p.key_count AS key_count, p.version AS version,
       p.self_id AS self_id
