// A live edge: this user's, not dormant, not expired at $now, not retracted or corrected by the
// person (design §10: a memory the person said was wrong is never recalled, not even as
// history). Superseded edges are live too (a history recall may show them); `@current` is the
// live edge that is not superseded.
EDGE.user_id = $user_id AND NOT coalesce(EDGE.dormant, false) AND EDGE.retracted_at IS NULL
  AND EDGE.corrected_at IS NULL
  AND (EDGE.expires_at IS NULL OR EDGE.expires_at > $now)
