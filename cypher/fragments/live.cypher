// A live edge: this user's, not dormant, not expired at $now. Superseded edges are live too
// (a history recall may show them); `@current` is the live edge that is not superseded.
EDGE.user_id = $user_id AND NOT coalesce(EDGE.dormant, false)
  AND (EDGE.expires_at IS NULL OR EDGE.expires_at > $now)
