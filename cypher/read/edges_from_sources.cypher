// All of the user's stored edges of (source, label) pairs that a commit may make one-to-one
// (read/edges_between gives the rest). The type is matched dynamically (`[r:$(label)]`), so a
// source with many edges (the self node) is expanded by that one type only.
// A version the person corrected is history only: the correction stands in its place.
UNWIND $pairs AS pair
MATCH (s:Entity {user_id: $user_id, id: pair.source_id})-[r:$(pair.label)]->(t:Entity {user_id: $user_id})
WHERE r.user_id = $user_id AND r.corrected_at IS NULL
RETURN r.id AS id, s.id AS source_id, type(r) AS label, t.id AS target_id,
       r.superseded_at IS NOT NULL AS superseded, r.cardinality AS cardinality,
       r.confidence AS confidence
