MATCH (k:Key {user_id: $user_id})
RETURN k.id AS id
