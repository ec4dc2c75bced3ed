// Seed keys: one per entity name or alias, one per relation label (SPEC §2).
UNWIND $rows AS row
MERGE (k:Key {user_id: $user_id, id: row.id})
ON CREATE SET k.embedding = row.embedding, k.created_at = $now
SET k.text = row.text, k.kind = row.kind, k.entity_id = row.entity_id, k.label = row.label
