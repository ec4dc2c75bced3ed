// Import, the swap (one transaction, design §11): the user's partition lock, and whether the
// partition holds a memory or is being forgotten.
MERGE (p:Partition {user_id: $user_id})
ON CREATE SET p.created_at = $now, p.version = 0
SET p._lock = true
REMOVE p._lock
RETURN EXISTS { MATCH (:Entity {user_id: $user_id}) }
       OR EXISTS { MATCH (:Conversation {user_id: $user_id}) } AS holds,
       p.erasing_since AS erasing_since
