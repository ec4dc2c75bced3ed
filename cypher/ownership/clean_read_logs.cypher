// Read-log entries ("source/edge/target") naming an erased memory go from every conversation
// of the user, so nothing refers to it.
MATCH (c:Conversation {user_id: $user_id})
WHERE any(e IN coalesce(c.read_log, []) + coalesce(c.read_log_applied, [])
          WHERE split(e, '/')[1] IN $edge_ids)
SET c.read_log = [e IN coalesce(c.read_log, []) WHERE NOT split(e, '/')[1] IN $edge_ids],
    c.read_log_applied = [e IN coalesce(c.read_log_applied, [])
                          WHERE NOT split(e, '/')[1] IN $edge_ids]
