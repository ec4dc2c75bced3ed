// Reinforcement (design §6): S_now = S0·e^(−λt), S_new = min(S_now + bump, max);
// S0 := S_new, touched_at := now, dormant := false. Used on re-observation and at close.
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id})-[r]->(:Entity)
WHERE r.id = row.edge_id AND r.user_id = $user_id
WITH r, duration.inSeconds(r.touched_at, $now) AS elapsed
WITH r, CASE WHEN elapsed.seconds < 0 THEN 0.0
             ELSE (elapsed.seconds + elapsed.nanosecondsOfSecond / 1.0e9) / 86400.0 END AS days
WITH r, r.strength_at_touch * exp(-$lambdas[r.stability] * days) AS s_now
WITH r, CASE WHEN s_now + $bump > $max_strength THEN $max_strength ELSE s_now + $bump END AS s_new
SET r.strength_at_touch = s_new, r.strength = s_new, r.touched_at = $now, r.dormant = false
RETURN count(r) AS reinforced
