// Import, a batch of entities as they were exported (their ids, dates and properties kept).
UNWIND $rows AS row
CREATE (n:Entity {user_id: $user_id, id: row.id})
SET n += row.props
SET n:$(row.kind_label)
