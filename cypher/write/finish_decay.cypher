// The scheduled pass this holder claimed is done: record when it ran, count it, free the
// claim.
MATCH (m:PegasusMaintenance {name: 'decay', holder: $holder})
SET m.last_run_at = $now, m.running_until = null, m.holder = null,
    m.last_edges = $edges, m.last_dormant_now = $dormant_now, m.runs = coalesce(m.runs, 0) + 1
