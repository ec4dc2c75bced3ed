// After a conversation is erased: the memories it shared with others keep their other
// sightings; their words (and their :Snippet) fall back to another sighting's where they were
// the erased conversation's. Rows: {edge_id, source_id, target_id, conversations, sightings,
// words: null | {snippet, evidence, confidence, said_at, said_in, packed, vector}}.
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
SET r.conversations = row.conversations, r.sightings = row.sightings
WITH r, row WHERE row.words IS NOT NULL
SET r.snippet = row.words.snippet, r.evidence = row.words.evidence,
    r.confidence = row.words.confidence
WITH r, row
MATCH (s:Snippet {user_id: $user_id, id: r.id})
SET s.text = row.words.snippet, s.embedding_f32 = row.words.packed,
    s.embedding = row.words.vector, s.said_at = row.words.said_at,
    s.conversation_id = row.words.said_in
