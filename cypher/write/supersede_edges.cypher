// Superseded (a one_to_one replacement) or ended: kept as provenance, hidden from recall.
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id})-[r]->(:Entity)
WHERE r.id = row.edge_id AND r.user_id = $user_id
SET r.superseded_at = $now, r.superseded_by = row.by, r.superseded_in = $conversation_id
