// Import, a batch of checked entities (design §11): each field named, the properties a map the
// importer built of `p_`-prefixed keys and scalar values (never a map from the file).
UNWIND $rows AS row
CREATE (n:Entity {user_id: $user_id, id: row.id})
SET n.name = row.name, n.kind = row.kind, n.aliases = row.aliases,
    n.confidence = row.confidence, n.conversations = row.conversations,
    n.provisional = row.provisional, n.is_self = row.is_self,
    n.created_at = row.created_at, n.updated_at = row.updated_at
SET n += row.properties
SET n:$(row.kind_label)
