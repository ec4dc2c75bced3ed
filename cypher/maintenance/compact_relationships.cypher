// Every relationship between copied nodes, with its type and properties.
MATCH (a)-[r]->(b)
WHERE NOT a:PegasusMigration AND NOT a:PegasusMigrationLock
  AND NOT b:PegasusMigration AND NOT b:PegasusMigrationLock
RETURN elementId(a) AS source, elementId(b) AS target, type(r) AS type, properties(r) AS props
