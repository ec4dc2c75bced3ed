// When an entity is erased, the conversations that speak of it lose what names it: a summary
// or tag holding one of its forms ($forms, lower case), every recorded turn holding one, and
// every passage of a turn (design §7.11) holding one. The turns after a removed one move up:
// the passages left keep pointing at their turn, and the count of consolidated turns counts
// the turns left.
MATCH (c:Conversation {user_id: $user_id})
WITH c, coalesce(c.turns, []) AS all_turns
WITH c, all_turns,
     any(f IN $forms WHERE toLower(coalesce(c.summary, '')) CONTAINS f) AS in_summary,
     [t IN coalesce(c.tags, []) WHERE NOT any(f IN $forms WHERE toLower(t) CONTAINS f)] AS tags,
     [i IN range(0, size(all_turns) - 1)
      WHERE any(f IN $forms WHERE toLower(all_turns[i]) CONTAINS f)] AS removed
WHERE in_summary OR size(tags) < size(coalesce(c.tags, [])) OR size(removed) > 0
CALL (c, removed) {
  MATCH (p:Passage {user_id: $user_id, conversation_id: c.id})
  WITH p, removed, any(f IN $forms WHERE toLower(p.text) CONTAINS f) OR p.turn IN removed AS gone
  FOREACH (_ IN CASE WHEN gone THEN [1] ELSE [] END | DETACH DELETE p)
  WITH p, removed, gone WHERE NOT gone
  SET p.turn = p.turn - size([r IN removed WHERE r < p.turn])
}
SET c.summary = CASE WHEN in_summary THEN null ELSE c.summary END, c.tags = tags,
    c.turns = [i IN range(0, size(all_turns) - 1) WHERE NOT i IN removed | all_turns[i]],
    c.extracted_turns = CASE WHEN c.extracted_turns IS NULL THEN null
                             ELSE c.extracted_turns
                                  - size([r IN removed WHERE r < c.extracted_turns]) END
RETURN count(c) AS scrubbed
