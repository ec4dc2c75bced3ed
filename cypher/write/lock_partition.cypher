// Opens a write on one user's partition. The SET takes the Partition node's write lock, so
// concurrent commits of the same user run one after the other (no duplicate entities).
MERGE (p:Partition {user_id: $user_id})
ON CREATE SET p.created_at = $now, p.version = 0
SET p.locked_at = $now
RETURN p.self_id AS self_id, p.version AS version
