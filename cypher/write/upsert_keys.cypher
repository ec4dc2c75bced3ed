// Seed keys: one per entity name or alias, one per relation label (design §2).
// `centred` (embedding minus the model's fixed centre, a float list) is what the key_centred
// vector index holds; `embedding_f32` keeps the raw float32 embedding packed little-endian,
// for the exact oracle and for centring again should the centre change.
UNWIND $rows AS row
MERGE (k:Key {user_id: $user_id, id: row.id})
ON CREATE SET k.centred = row.centred, k.centre_id = $centre_id, k.embedding_f32 = row.packed,
              k.created_at = $now
SET k.text = row.text, k.kind = row.kind, k.entity_id = row.entity_id, k.label = row.label
