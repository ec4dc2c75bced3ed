// Superseded (a one_to_one replacement) or ended: kept as provenance, hidden from recall.
// Both ends are named, so the edge is found between them from the end with fewer edges
// (a hub such as the self node is never scanned).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id}),
      (t:Entity {user_id: $user_id, id: row.target_id})
MATCH (s)-[r]->(t)
WHERE r.id = row.edge_id AND r.user_id = $user_id
SET r.superseded_at = $now, r.superseded_by = row.by, r.superseded_in = $conversation_id
