// Reinforcement (design §6): S_now = S0·e^(−λt) (fragments/strength), S_new = min(S_now + bump, max);
// S0 := S_new, touched_at := now, dormant := false. Used on re-observation and at close.
// touched_at never moves backwards: a reinforcement dated before the last touch (a replay, a
// client's clock) adds its bump at the later instant, so no date in the past can fade a memory.
// Each edge counts its reinforcements and keeps the dates of the last 20 (its history, §10).
// Rows name both ends ({source_id, target_id, edge_id}): the edge is found between them from
// the end with fewer edges. A read log written before targets were logged names the source
// only; its edges are looked for among the source's.
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id})
CALL (s, row) {
  WITH s, row WHERE row.target_id IS NOT NULL
  MATCH (t:Entity {user_id: $user_id, id: row.target_id})
  MATCH (s)-[r]->(t)
  WHERE r.id = row.edge_id AND r.user_id = $user_id
  RETURN r
  UNION
  WITH s, row WHERE row.target_id IS NULL
  MATCH (s)-[r]->(:Entity)
  WHERE r.id = row.edge_id AND r.user_id = $user_id
  RETURN r
}
WITH r, @strength(r) AS s_now
WITH r, CASE WHEN s_now + $bump > $max_strength THEN $max_strength ELSE s_now + $bump END AS s_new
SET r.strength_at_touch = s_new, r.strength = s_new, r.dormant = false,
    r.touched_at = CASE WHEN r.touched_at IS NULL OR r.touched_at < $now THEN $now
                        ELSE r.touched_at END,
    r.reinforcements = coalesce(r.reinforcements, 0) + 1,
    r.reinforced_at = (coalesce(r.reinforced_at, []) + $now)[-20..]
RETURN count(r) AS reinforced
