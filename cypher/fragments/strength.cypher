// An edge's strength at $now (design §6): S0·e^(−λt), S0 = strength_at_touch, t in days since
// touched_at (none when that lies after $now), λ = $lambdas[stability] (none for an unknown
// stability). The one definition of the decay: the daily pass (maintenance/decay), the
// reinforcement (write/reinforce) and a memory's history (ownership/memory) all use it, as
// `@strength(r)`. Null when the edge has no S0 or no touched_at.
EDGE.strength_at_touch * exp(-coalesce($lambdas[EDGE.stability], 0.0)
  * CASE WHEN EDGE.touched_at > $now THEN 0.0
         ELSE (duration.inSeconds(EDGE.touched_at, $now).seconds
               + duration.inSeconds(EDGE.touched_at, $now).nanosecondsOfSecond / 1.0e9) / 86400.0
    END)
