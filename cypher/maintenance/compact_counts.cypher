// What a store holds, by label set and by relationship type: compared before a compacted
// store replaces the old one (the caller sorts each label set).
CALL () {
  MATCH (n)
  WHERE NOT n:PegasusMigration AND NOT n:PegasusMigrationLock
  RETURN 'node' AS kind, labels(n) AS names
  UNION ALL
  MATCH ()-[r]->()
  RETURN 'relationship' AS kind, [type(r)] AS names
}
RETURN kind, names, count(*) AS count
