// Undo of a merge: the edges the merging conversation created for the absorbed name move from
// the survivor to the restored node (same type and properties; a relationship cannot change
// ends, so it is recreated there and the misplaced copy removed).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.survivor_id})-[r]-(o:Entity {user_id: $user_id})
WHERE r.id = row.edge_id AND r.user_id = $user_id
MATCH (n:Entity {user_id: $user_id, id: row.restored_id})
WITH r, s, o, n, type(r) AS label, properties(r) AS props, startNode(r) = s AS outgoing
CALL (s, o, n, label, props, outgoing) {
  WITH * WHERE outgoing
  CREATE (n)-[x:$(label)]->(o)
  SET x = props
}
CALL (s, o, n, label, props, outgoing) {
  WITH * WHERE NOT outgoing
  CREATE (o)-[x:$(label)]->(n)
  SET x = props
}
WITH r, s, o, n, outgoing
// The edge's snippets (its words and its sightings') name its new ends.
CALL (r, o, n, outgoing) {
  OPTIONAL MATCH (snip:Snippet {user_id: $user_id, edge_id: r.id})
  SET snip.source_id = CASE WHEN outgoing THEN n.id ELSE o.id END,
      snip.target_id = CASE WHEN outgoing THEN o.id ELSE n.id END
}
DELETE r
RETURN count(*) AS moved
