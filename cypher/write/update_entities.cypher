// Entities that absorbed a new sighting (design §5): the new state is computed by merge. The
// kind label follows the kind (a provisional OTHER node takes the kind of the real entity).
UNWIND $rows AS row
MATCH (n:Entity {user_id: $user_id, id: row.id})
SET n += row.props, n.updated_at = $now
REMOVE n:Person:Org:Place:Event:Thing:Topic:Preference:Other
SET n:$(row.kind_label)
