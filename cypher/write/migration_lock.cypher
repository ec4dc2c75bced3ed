// Take the schema lock for $holder unless another holder's lease is still running. MERGE on
// the unique name creates the node once; its write lock is then taken first (the SET), so the
// holder read after it is the last committed one: of two takers, the second sees the first.
MERGE (l:PegasusMigrationLock {name: 'schema'})
SET l.take_lock = true
REMOVE l.take_lock
WITH l
WITH l, l.holder IS NULL OR l.holder = $holder OR l.expires_at < datetime() AS free
SET l.holder = CASE WHEN free THEN $holder ELSE l.holder END,
    l.expires_at = CASE WHEN free THEN datetime() + duration({seconds: $lease_s})
                        ELSE l.expires_at END
RETURN free AS taken, l.holder AS holder
