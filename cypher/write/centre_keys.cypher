// Store keys' centred vectors (the ones the key_centred index holds) and which centre they
// were computed on.
UNWIND $rows AS row
MATCH (k:Key {user_id: row.user_id, id: row.id})
SET k.centred = row.centred, k.centre_id = $centre_id
