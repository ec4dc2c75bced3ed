// The words now on the given edges and every sighting's words, with the :Snippet nodes they
// have: the edge's own (id = the edge's id; null: none yet) and the other sightings' (echoes).
// Rows name both ends of the edge ({source_id, target_id, edge_id}).
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
CALL (r) {
  OPTIONAL MATCH (e:Snippet {user_id: $user_id, edge_id: r.id})
  WHERE e.id <> r.id
  RETURN collect(e {.id, .text, .said_at, .conversation_id}) AS echoes
}
RETURN r.id AS id, row.source_id AS source_id, row.target_id AS target_id,
       r.snippet AS snippet, s.text AS stored, coalesce(r.sightings, []) AS sightings, echoes
