// A page of copied relationships, between nodes found by their new element ids.
UNWIND $rows AS row
MATCH (a) WHERE elementId(a) = row.source
MATCH (b) WHERE elementId(b) = row.target
CREATE (a)-[r:$(row.type)]->(b)
SET r = row.props
