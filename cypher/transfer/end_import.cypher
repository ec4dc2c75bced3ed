// Import, last write into the staging partition: its self node and key count.
MATCH (p:Partition {user_id: $staging_id})
CALL (p) {
  OPTIONAL MATCH (k:Key {user_id: $staging_id})
  RETURN count(k) AS n
}
SET p.key_count = n, p.self_id = $self_id
