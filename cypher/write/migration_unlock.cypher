// Release the schema lock if $holder still holds it.
MATCH (l:PegasusMigrationLock {name: 'schema', holder: $holder})
SET l.holder = null, l.expires_at = null
