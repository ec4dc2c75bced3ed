// Seed keys: one per entity name or alias, one per relation label (design §2).
// `embedding` (a float list) feeds the vector index; `embedding_f32` holds the same float32
// values packed little-endian, which the exact scan reads far faster than a list of floats.
UNWIND $rows AS row
MERGE (k:Key {user_id: $user_id, id: row.id})
ON CREATE SET k.embedding = row.embedding, k.embedding_f32 = row.packed, k.created_at = $now
SET k.text = row.text, k.kind = row.kind, k.entity_id = row.entity_id, k.label = row.label
