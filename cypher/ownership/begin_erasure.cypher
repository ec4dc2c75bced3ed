// Forget everything of a user, step 1 (design §10): under the partition's lock, mark it as
// being erased, so a commit that comes while the batches run is refused (not half-erased),
// and count what there is.
MERGE (p:Partition {user_id: $user_id})
ON CREATE SET p.created_at = $now, p.version = 0
SET p._lock = true, p.erasing_since = coalesce(p.erasing_since, $now)
REMOVE p._lock
RETURN COUNT { MATCH (:Entity {user_id: $user_id})-[r]->() WHERE r.user_id = $user_id } AS memories,
       COUNT { MATCH (n:Entity {user_id: $user_id}) } AS entities,
       COUNT { MATCH (k:Key {user_id: $user_id}) } AS keys,
       COUNT { MATCH (c:Conversation {user_id: $user_id}) } AS conversations,
       COUNT { MATCH (m:MergeRecord {user_id: $user_id}) } AS merge_records
