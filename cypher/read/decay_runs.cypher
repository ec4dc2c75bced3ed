// How many scheduled decay passes have run on this database, and when the last one did.
OPTIONAL MATCH (m:PegasusMaintenance {name: 'decay'})
RETURN coalesce(m.runs, 0) AS runs, m.last_run_at AS last_run_at
