MATCH (:Entity)-[r]->(:Entity)
WHERE r.strength_at_touch IS NOT NULL
RETURN count(r) AS edges,
       count(CASE WHEN r.dormant THEN 1 END) AS dormant,
       count(CASE WHEN r.expired THEN 1 END) AS expired
