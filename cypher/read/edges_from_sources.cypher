// The user's stored edges for the (source, label) pairs a commit touches.
UNWIND $pairs AS pair
MATCH (s:Entity {user_id: $user_id, id: pair.source_id})-[r]->(t:Entity {user_id: $user_id})
WHERE type(r) = pair.label AND r.user_id = $user_id
RETURN r.id AS id, s.id AS source_id, type(r) AS label, t.id AS target_id,
       r.superseded_at IS NOT NULL AS superseded, r.cardinality AS cardinality,
       r.confidence AS confidence
