// Merges to inspect: flagged ones (and, when asked, pending review candidates), newest first.
MATCH (m:MergeRecord {user_id: $user_id})
WHERE m.status IN $statuses
RETURN m.id AS id, m.status AS status, m.rule AS rule, m.confidence AS confidence,
       m.absorbed_name AS absorbed_name, m.survivor_name AS survivor_name,
       m.survivor_id AS survivor_id, m.kind AS kind, m.conversation_id AS conversation_id,
       m.candidate_names AS candidate_names, m.created_at AS created_at
ORDER BY m.created_at DESC, m.id
