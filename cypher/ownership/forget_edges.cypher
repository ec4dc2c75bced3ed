// Erase memories ({edge_id, source_id, target_id}): the edge with every property, and every
// :Snippet of it (its own words and its sightings', so they leave the full-text index), and a
// migration's mark on it; and the passages of recorded turns not consolidated yet that say its
// words (design §7.11: the person's words leave recall however they are held). The labels they
// had, for the stale-key check.
UNWIND $rows AS row
CALL (row) {
  OPTIONAL MATCH (s:Snippet {user_id: $user_id, edge_id: row.edge_id})
  DETACH DELETE s
}
CALL (row) {
  OPTIONAL MATCH (m:SnippetBackfill {user_id: $user_id, edge_id: row.edge_id})
  DELETE m
}
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
WITH r, type(r) AS label, toLower(trim(coalesce(r.snippet, ''))) AS words
CALL (words) {
  MATCH (p:Passage {user_id: $user_id})
  WHERE size(words) > 0
    AND (toLower(p.text) CONTAINS words OR words CONTAINS toLower(trim(p.text)))
  DETACH DELETE p
}
DELETE r
RETURN collect(DISTINCT label) AS labels, count(*) AS forgotten
