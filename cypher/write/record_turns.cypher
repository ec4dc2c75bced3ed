// Recorded turns (the proxy and the Opencode plugin record each turn as it happens), so the
// transcript is in the graph before anything is extracted. $turns: [{id, json}], `json` the
// turn as JSON text. A turn whose client id is already recorded is not recorded again (a
// client resending after a timeout); a turn without an id equal to the last one recorded is
// not recorded twice (a proxy client retrying after an upstream failure resends it).
// $model: the model the client asked the proxy for (null from hooks and plugins): the last one
// named is the model that extracts the conversation when PEGASUS_LLM_MODEL is not set.
// The node's write lock is taken first (the SET), so the turns read after it are the last
// committed ones: two writers (a streamed reply's record, the client's next turn) append one
// after the other, and neither drops the other's turn (docs/decisions.md).
// Nothing is recorded when the transcript would pass $max_chars characters of JSON text
// (`fits` false): the limit on a whole transcript holds however it is sent, turn by turn.
// `fresh`: the turns recorded now, as JSON text, in order; they are the transcript's last ones
// (their passages are indexed next: write/upsert_passages). `created`: the conversation is new.
MERGE (c:Conversation {user_id: $user_id, id: $conversation_id})
ON CREATE SET c.started_at = $now, c.status = 'open', c.read_log = [], c.source = $source,
              c.created_now = true
SET c.turns_lock = true
REMOVE c.turns_lock
WITH c
WITH c, coalesce(c.turns, []) AS had, coalesce(c.turn_ids, []) AS seen
WITH c, had, seen, [t IN $turns WHERE t.id IS NULL OR NOT t.id IN seen] AS fresh
WITH c, had, seen, CASE WHEN size(had) > 0 AND size(fresh) > 0 AND head(fresh).id IS NULL
                             AND last(had) = head(fresh).json THEN tail(fresh)
                        ELSE fresh END AS fresh
WITH c, had, seen, fresh,
     reduce(n = 0, t IN had | n + size(t)) + reduce(n = 0, t IN fresh | n + size(t.json))
       <= $max_chars AS fits
FOREACH (_ IN CASE WHEN fits THEN [1] ELSE [] END |
  SET c.turns = had + [t IN fresh | t.json],
      c.turn_ids = seen + [t IN fresh WHERE t.id IS NOT NULL | t.id],
      c.last_active_at = $now, c.model = coalesce($model, c.model))
WITH c, fresh, fits, coalesce(c.created_now, false) AS created
REMOVE c.created_now
RETURN size(coalesce(c.turns, [])) AS turns, CASE WHEN fits THEN size(fresh) ELSE 0 END
       AS recorded, fits, CASE WHEN fits THEN [t IN fresh | t.json] ELSE [] END AS fresh,
       created, coalesce(c.extracted_turns, 0) AS extracted_turns,
       size([t IN coalesce(c.turns, [])[coalesce(c.extracted_turns, 0)..]
             WHERE t STARTS WITH '{"role": "user"']) AS pending_user
