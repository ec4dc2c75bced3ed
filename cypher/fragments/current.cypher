// A current edge (design, "Current edges"): the one definition every read of the present
// graph uses, written `@current(r)` in a query file (the loader puts this text in, EDGE → r).
// Current = live (fragments/live.cypher: this user's, not dormant, not expired at $now) and
// not superseded.
@live(EDGE) AND EDGE.superseded_at IS NULL
