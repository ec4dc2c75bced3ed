// Merges the reviewer was unsure of (0.70–0.90), and candidates waiting for review.
// :param user_id => 'demo'
MATCH (m:MergeRecord {user_id: $user_id})
WHERE m.status IN ['flagged', 'pending']
OPTIONAL MATCH (n:Entity {user_id: $user_id, id: m.survivor_id})
RETURN m.status AS status, m.absorbed_name AS absorbed, n.name AS into, m.confidence AS confidence,
       m.candidate_names AS candidates, m.conversation_id AS conversation, m.id AS record_id
ORDER BY m.created_at DESC
