// Every user with anything in the store.
MATCH (n)
WHERE n.user_id IS NOT NULL
RETURN DISTINCT n.user_id AS user_id
ORDER BY user_id
