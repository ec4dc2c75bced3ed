// Import, last step: the partition's self node, key count and version, and the end of the
// import mark.
MATCH (p:Partition {user_id: $user_id})
CALL (p) {
  OPTIONAL MATCH (k:Key {user_id: $user_id})
  RETURN count(k) AS n
}
SET p.key_count = n, p.self_id = $self_id, p.version = coalesce(p.version, 0) + 1,
    p.epoch = coalesce(p.epoch, randomUUID()), p.updated_at = $now
REMOVE p.importing_since
