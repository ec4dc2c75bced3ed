// Keys embedded again by the running embedder: the raw vector and its centred copy.
UNWIND $rows AS row
MATCH (k:Key {user_id: row.user_id, id: row.id})
SET k.embedding_f32 = row.packed, k.centred = row.centred, k.centre_id = $centre_id
REMOVE k.embedding
