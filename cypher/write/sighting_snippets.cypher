// The words of an edge's other sightings, one :Snippet per distinct text ({id, edge_id,
// source_id, target_id, text, said_at, conversation_id, packed, vector}; packed and vector are
// null when the text is unchanged and its embedding stays), and the ones no sighting says any
// more ($drop: ids).
UNWIND $rows AS row
MERGE (s:Snippet {user_id: $user_id, id: row.id})
SET s.edge_id = row.edge_id, s.source_id = row.source_id, s.target_id = row.target_id,
    s.text = row.text, s.user_key = $user_key, s.said_at = row.said_at,
    s.conversation_id = row.conversation_id,
    s.embedding_f32 = coalesce(row.packed, s.embedding_f32),
    s.embedding = coalesce(row.vector, s.embedding)
WITH count(*) AS written
UNWIND $drop AS id
MATCH (s:Snippet {user_id: $user_id, id: id})
DETACH DELETE s
