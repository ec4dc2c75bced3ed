// New memory edges; the relationship type is a label validated by the cleaning pass.
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id})
MATCH (t:Entity {user_id: $user_id, id: row.target_id})
CREATE (s)-[r:$(row.label)]->(t)
SET r = row.props
