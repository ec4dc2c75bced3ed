// Entities that absorbed a new sighting (design §5): the new state is computed by merge.
UNWIND $rows AS row
MATCH (n:Entity {user_id: $user_id, id: row.id})
SET n += row.props, n.updated_at = $now
