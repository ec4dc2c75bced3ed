// Retract a memory the person says is wrong (design §10), or take the retraction back
// ($retract false). A retracted edge stays, with the date, and is never recalled.
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
SET r.retracted_at = CASE WHEN $retract THEN coalesce(r.retracted_at, $now) ELSE null END
RETURN count(r) AS changed
