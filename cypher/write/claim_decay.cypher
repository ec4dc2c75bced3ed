// Claim the scheduled decay pass (design §6): only when the last pass is older than
// $due_before and no other server's claim is still running. MERGE on the unique name makes
// the check and the claim one atomic step, so servers sharing a database never both run it.
MERGE (m:PegasusMaintenance {name: 'decay'})
WITH m, (m.last_run_at IS NULL OR m.last_run_at < $due_before)
        AND (m.running_until IS NULL OR m.running_until < $now) AS due
SET m.holder = CASE WHEN due THEN $holder ELSE m.holder END,
    m.running_until = CASE WHEN due THEN $now + duration({seconds: $lease_s})
                           ELSE m.running_until END
RETURN due AS claimed, m.last_run_at AS last_run_at
