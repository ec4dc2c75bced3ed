// The user's stored edges of one label between two given entities, for each relation of a
// commit: found between both ends (by the (user_id, id) index) and expanded from the end with
// fewer edges, so the self node's thousands of edges are never read.
// A version the person corrected is history only: the correction stands in its place.
UNWIND $triples AS triple
MATCH (s:Entity {user_id: $user_id, id: triple.source_id}),
      (t:Entity {user_id: $user_id, id: triple.target_id})
MATCH (s)-[r:$(triple.label)]->(t)
WHERE r.user_id = $user_id AND r.corrected_at IS NULL
RETURN r.id AS id, s.id AS source_id, type(r) AS label, t.id AS target_id,
       r.superseded_at IS NOT NULL AS superseded, r.cardinality AS cardinality,
       r.confidence AS confidence
