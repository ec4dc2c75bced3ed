// Import, a batch of checked memory edges, each field named, and their :Snippet nodes (words,
// when and where they were said, the embedding computed anew, packed and as the list the
// snippet_meaning index holds). A corrected version was corrected by its partition's owner:
// $owner, the user imported for (the staging partition's id is never a person's).
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
CREATE (a)-[r:$(row.relation)]->(b)
SET r.user_id = $user_id, r.id = row.id, r.strength = row.strength,
    r.strength_at_touch = row.strength_at_touch, r.touched_at = row.touched_at,
    r.confidence = row.confidence, r.stability = row.stability,
    r.cardinality = row.cardinality, r.expires_at = row.expires_at, r.dormant = row.dormant,
    r.expired = row.expired, r.superseded_at = row.superseded_at,
    r.superseded_by = row.superseded_by, r.superseded_in = row.superseded_in,
    r.retracted_at = row.retracted_at, r.corrects = row.corrects,
    r.corrected_at = row.corrected_at, r.corrected_via = row.corrected_via,
    r.corrected_by = CASE WHEN row.corrected_at IS NULL THEN null ELSE $owner END,
    r.snippet = row.snippet, r.evidence = row.evidence,
    r.conversations = row.conversations, r.sightings = row.sightings,
    r.reinforcements = row.reinforcements, r.reinforced_at = row.reinforced_at,
    r.created_at = row.created_at
CREATE (s:Snippet {user_id: $user_id, id: row.id})
SET s.edge_id = row.id, s.source_id = row.source_id, s.target_id = row.target_id,
    s.text = row.snippet, s.user_key = $user_key, s.embedding_f32 = row.packed,
    s.embedding = row.vector, s.said_at = row.said_at, s.conversation_id = row.said_in
