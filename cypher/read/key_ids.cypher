// Which of these keys the user has already (found by the (user_id, id) constraint's index).
UNWIND $ids AS key_id
MATCH (k:Key {user_id: $user_id, id: key_id})
RETURN k.id AS id
