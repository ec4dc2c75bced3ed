// Take the schema lock for $holder unless another holder's lease is still running; MERGE on
// the unique name makes the check and the take one atomic step.
MERGE (l:PegasusMigrationLock {name: 'schema'})
WITH l, l.holder IS NULL OR l.holder = $holder OR l.expires_at < datetime() AS free
SET l.holder = CASE WHEN free THEN $holder ELSE l.holder END,
    l.expires_at = CASE WHEN free THEN datetime() + duration({seconds: $lease_s})
                        ELSE l.expires_at END
RETURN free AS taken, l.holder AS holder
