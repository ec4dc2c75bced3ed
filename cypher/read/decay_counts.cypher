// Edges, dormant and expired counts: of every user ($user_id null), or of one partition.
MATCH (a:Entity)-[r]->(:Entity)
WHERE ($user_id IS NULL OR a.user_id = $user_id) AND r.strength_at_touch IS NOT NULL
RETURN count(r) AS edges,
       count(CASE WHEN r.dormant THEN 1 END) AS dormant,
       count(CASE WHEN r.expired THEN 1 END) AS expired
