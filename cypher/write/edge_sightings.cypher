// A new sighting of a stored edge: cite the conversation and log its sighting (its words, when,
// how sure: `sightings`, one JSON text per conversation, so forgetting a conversation can take
// its words back, design §10); take the new words and confidence only when the new sighting is
// surer (design §6). Confidence never moves otherwise. Said again, a retracted memory counts
// again: the person's newer words win over the retraction.
// Both ends are named, so the edge is found between them from the end with fewer edges
// (a hub such as the self node is never scanned).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id}),
      (t:Entity {user_id: $user_id, id: row.target_id})
MATCH (s)-[r]->(t)
WHERE r.id = row.edge_id AND r.user_id = $user_id
WITH r, row, NOT $conversation_id IN r.conversations AS fresh
SET r.conversations = CASE WHEN fresh THEN r.conversations + $conversation_id
                           ELSE r.conversations END,
    r.sightings = CASE WHEN fresh AND row.sighting IS NOT NULL
                       THEN coalesce(r.sightings, []) + row.sighting ELSE r.sightings END,
    r.retracted_at = CASE WHEN fresh THEN null ELSE r.retracted_at END
FOREACH (_ IN CASE WHEN row.confidence > r.confidence THEN [1] ELSE [] END |
  SET r.confidence = row.confidence, r.snippet = row.snippet, r.evidence = row.evidence)
