// Every node of the database but the migration records and locks (the fresh store writes its
// own): what `pegasus neo4j compact` copies (docs/privacy.md, "Making a deletion final").
MATCH (n)
WHERE NOT n:PegasusMigration AND NOT n:PegasusMigrationLock
RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props
