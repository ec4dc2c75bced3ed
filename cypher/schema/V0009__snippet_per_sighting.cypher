// Every sighting's words are searchable (design §2, "Snippet"; round 3): an edge keeps the words
// it shows on its own :Snippet (id = the edge's id), and each other sighting that said it in
// other words adds one :Snippet more. Every snippet names its edge (`edge_id`), and the
// snippets of an edge are found by this index. Snippets written before this version are their
// edge's own: their edge_id is their id.
CREATE INDEX snippet_edge IF NOT EXISTS FOR (s:Snippet) ON (s.user_id, s.edge_id);

MATCH (s:Snippet)
WHERE s.edge_id IS NULL
CALL (s) {
  SET s.edge_id = s.id
} IN TRANSACTIONS OF 5000 ROWS;

// Edges seen in more than one conversation may hold words no snippet has: each is marked for
// `Memory.migrate`, which embeds their sightings' words (Cypher cannot) and removes the mark.
// A mark holds ids only; erasing the user or the edge removes it too.
MATCH (a:Entity)-[r]->(b:Entity)
WHERE r.user_id IS NOT NULL AND size(coalesce(r.sightings, [])) > 1
CALL (r, a, b) {
  MERGE (m:SnippetBackfill {user_id: r.user_id, edge_id: r.id})
  SET m.source_id = a.id, m.target_id = b.id
} IN TRANSACTIONS OF 5000 ROWS;
