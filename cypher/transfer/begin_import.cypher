// Import, step 1 (design §11): under the partition lock, refuse a partition that holds
// anything, else mark it as being imported (commits are refused until the import ends).
MERGE (p:Partition {user_id: $user_id})
ON CREATE SET p.created_at = $now, p.version = 0
SET p._lock = true
REMOVE p._lock
WITH p, EXISTS { MATCH (:Entity {user_id: $user_id}) }
        OR EXISTS { MATCH (:Conversation {user_id: $user_id}) } AS holds
SET p.importing_since = CASE WHEN holds THEN p.importing_since ELSE $now END
RETURN holds, p.erasing_since AS erasing_since
