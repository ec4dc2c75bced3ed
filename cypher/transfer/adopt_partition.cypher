// Import, the swap's last step: the user's partition takes the staging's self node and key
// count, with a new epoch (every cached snapshot of the user is stale); the staging goes.
MATCH (s:Partition {user_id: $staging_id}), (p:Partition {user_id: $user_id})
SET p.key_count = s.key_count, p.self_id = s.self_id, p.version = coalesce(p.version, 0) + 1,
    p.epoch = randomUUID(), p.updated_at = $now
DETACH DELETE s
