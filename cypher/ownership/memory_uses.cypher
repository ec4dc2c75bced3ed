// The conversations still open whose recalls brought this memory in (their read logs name it;
// a close reinforces it and clears the log, so closed ones are counted by its reinforcements).
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'open' AND any(entry IN coalesce(c.read_log, [])
                                WHERE entry CONTAINS '/' + $edge_id + '/'
                                   OR entry ENDS WITH '/' + $edge_id)
RETURN c.id AS conversation_id ORDER BY c.id
