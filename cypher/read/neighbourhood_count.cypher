// Baseline for benchmarks: a bare two-hop neighbourhood count over the same seeds.
UNWIND $seed_ids AS seed_id
MATCH (s:Entity {user_id: $user_id, id: seed_id})-[]-(:Entity)-[]-(m:Entity)
RETURN count(m) AS reached
