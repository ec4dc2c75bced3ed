// The partition's key count (no keys, no seeds) and version (bumped by every commit).
MATCH (p:Partition {user_id: $user_id})
CALL (p) {
  OPTIONAL MATCH (k:Key {user_id: $user_id})
  RETURN count(k) AS n
}
SET p.key_count = n,
    p.self_id = coalesce($self_id, p.self_id),
    p.version = coalesce(p.version, 0) + 1,
    p.updated_at = $now
RETURN p.key_count AS key_count, p.version AS version
