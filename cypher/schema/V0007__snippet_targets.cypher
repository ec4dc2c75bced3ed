// Snippets name the target of their edge too (recall and commit then find an edge between its
// two ends instead of scanning every edge of its source, which for the self node was tens of
// thousands). Snippets written before this version get their edge's target here: one pass over
// the memory edges, each finding its snippet by the (user_id, id) constraint, in batches.
MATCH (:Entity)-[r]->(t:Entity)
WHERE r.user_id IS NOT NULL
CALL (r, t) {
  MATCH (s:Snippet {user_id: r.user_id, id: r.id})
  WHERE s.target_id IS NULL
  SET s.target_id = t.id
} IN TRANSACTIONS OF 5000 ROWS;
