// A page of copied nodes in the fresh store; the old element id maps to the new one.
UNWIND $rows AS row
CREATE (n:$(row.labels))
SET n = row.props
RETURN row.id AS old, elementId(n) AS new
