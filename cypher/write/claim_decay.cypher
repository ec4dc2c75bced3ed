// Claim the scheduled decay pass (design §6): only when the last pass is older than
// $due_before and no other server's claim is still running. MERGE on the unique name creates
// the node once; its write lock is then taken first (the SET), so the dates read after it are
// the last committed ones: of two servers, the second sees the first's claim and backs off.
MERGE (m:PegasusMaintenance {name: 'decay'})
SET m.claim_lock = true
REMOVE m.claim_lock
WITH m
WITH m, (m.last_run_at IS NULL OR m.last_run_at < $due_before)
        AND (m.running_until IS NULL OR m.running_until < $now) AS due
SET m.holder = CASE WHEN due THEN $holder ELSE m.holder END,
    m.running_until = CASE WHEN due THEN $now + duration({seconds: $lease_s})
                           ELSE m.running_until END
RETURN due AS claimed, m.last_run_at AS last_run_at
