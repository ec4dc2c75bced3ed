// A new sighting of a stored edge: cite the conversation; take the new words and confidence
// only when the new sighting is surer (design §6). Confidence never moves otherwise.
// Both ends are named, so the edge is found between them from the end with fewer edges
// (a hub such as the self node is never scanned).
UNWIND $rows AS row
MATCH (s:Entity {user_id: $user_id, id: row.source_id}),
      (t:Entity {user_id: $user_id, id: row.target_id})
MATCH (s)-[r]->(t)
WHERE r.id = row.edge_id AND r.user_id = $user_id
SET r.conversations = CASE WHEN $conversation_id IN r.conversations THEN r.conversations
                           ELSE r.conversations + $conversation_id END
FOREACH (_ IN CASE WHEN row.confidence > r.confidence THEN [1] ELSE [] END |
  SET r.confidence = row.confidence, r.snippet = row.snippet, r.evidence = row.evidence)
