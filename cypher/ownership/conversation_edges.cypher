// The memories one conversation touched: those citing it (its sightings) and those it
// superseded or ended, with what erasing its part needs (design §10, forget a conversation).
MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
WHERE r.user_id = $user_id
  AND ($conversation_id IN coalesce(r.conversations, []) OR r.superseded_in = $conversation_id)
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
RETURN r.id AS edge_id, a.id AS source_id, b.id AS target_id,
       coalesce(r.conversations, []) AS conversations, coalesce(r.sightings, []) AS sightings,
       r.snippet AS snippet, r.superseded_in = $conversation_id AS superseded_here,
       s.conversation_id AS said_in
