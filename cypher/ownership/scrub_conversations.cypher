// When an entity is erased, the conversations that speak of it lose what names it: a summary
// or tag holding one of its forms ($forms, lower case), and every recorded turn holding one.
MATCH (c:Conversation {user_id: $user_id})
WITH c,
     any(f IN $forms WHERE toLower(coalesce(c.summary, '')) CONTAINS f) AS in_summary,
     [t IN coalesce(c.tags, []) WHERE NOT any(f IN $forms WHERE toLower(t) CONTAINS f)] AS tags,
     [t IN coalesce(c.turns, []) WHERE NOT any(f IN $forms WHERE toLower(t) CONTAINS f)] AS turns
WHERE in_summary OR size(tags) < size(coalesce(c.tags, [])) OR size(turns) < size(coalesce(c.turns, []))
SET c.summary = CASE WHEN in_summary THEN null ELSE c.summary END, c.tags = tags,
    c.turns = turns
RETURN count(c) AS scrubbed
