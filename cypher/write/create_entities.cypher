// New entities: the Entity label plus one kind label (validated against the fixed eight).
UNWIND $rows AS row
CREATE (n:Entity {user_id: $user_id, id: row.id})
SET n += row.props, n.created_at = $now, n.updated_at = $now
SET n:$(row.kind_label)
