// How big one user's partition is: entities and seed keys (benchmarks, `pegasus stats`).
MATCH (p:Partition {user_id: $user_id})
CALL (p) { OPTIONAL MATCH (n:Entity {user_id: $user_id}) RETURN count(n) AS entities }
RETURN entities, p.key_count AS keys
