// The daily pass (design §6): strength = S0·e^(−λt) (fragments/strength), t in days since
// touched_at, λ by stability.
// Recomputed from S0 and touched_at, so running it twice, or daily versus once after a month,
// gives the same strengths. Below $dormant_below an edge is dormant; past expires_at it is
// expired. Nothing is deleted. Batched so millions of edges never share one transaction.
// $user_id null: every user's edges (the daily pass); else only that user's partition.
MATCH (a:Entity)-[r]->(:Entity)
WHERE ($user_id IS NULL OR a.user_id = $user_id)
  AND r.strength_at_touch IS NOT NULL AND r.touched_at IS NOT NULL
CALL (r) {
  WITH r, @strength(r) AS strength
  SET r.strength = strength,
      r.dormant = strength < $dormant_below,
      r.expired = r.expires_at IS NOT NULL AND r.expires_at <= $now
} IN TRANSACTIONS OF $batch_size ROWS
