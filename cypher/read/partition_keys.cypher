// Every seed key of one user (exact scoring for partitions up to exact_scan_max_keys).
MATCH (k:Key {user_id: $user_id})
RETURN k.id AS id, k.kind AS kind, k.entity_id AS entity_id, k.label AS label,
       k.embedding AS embedding
