// The corrected version of a memory becomes its history (design §10): superseded by the
// correction, with who corrected it, through which surface and when. $undo takes that back
// (the correction itself is erased by ownership/forget_edges). Corrected edges are never
// recalled, not even as history (fragments/live): the person said they were wrong.
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
FOREACH (_ IN CASE WHEN $undo THEN [] ELSE [1] END |
  SET r.superseded_at = $now, r.superseded_by = row.by, r.superseded_in = null,
      r.corrected_at = $now, r.corrected_by = $user_id, r.corrected_via = row.via)
FOREACH (_ IN CASE WHEN $undo THEN [1] ELSE [] END |
  REMOVE r.superseded_at, r.superseded_by, r.superseded_in, r.corrected_at, r.corrected_by,
         r.corrected_via)
RETURN count(r) AS changed
