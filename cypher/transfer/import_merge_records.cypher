// Import, a batch of checked merge records, each field named (never a map from the file: the
// partition is the one imported into, whatever a line says).
UNWIND $rows AS row
CREATE (m:MergeRecord {user_id: $user_id, id: row.id})
SET m.status = row.status, m.rule = row.rule, m.confidence = row.confidence, m.kind = row.kind,
    m.absorbed_name = row.absorbed_name, m.survivor_id = row.survivor_id,
    m.survivor_name = row.survivor_name, m.absorbed = row.absorbed, m.before = row.before,
    m.conversation_id = row.conversation_id, m.edge_ids = row.edge_ids,
    m.candidate_ids = row.candidate_ids, m.candidate_names = row.candidate_names,
    m.between = row.between, m.created_at = row.created_at, m.undone_at = row.undone_at,
    m.restored_id = row.restored_id
