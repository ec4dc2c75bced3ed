// Import, before anything is written: whether the user's partition holds a memory or is being
// forgotten (read only; the swap asks again under the lock).
OPTIONAL MATCH (p:Partition {user_id: $user_id})
RETURN EXISTS { MATCH (:Entity {user_id: $user_id}) }
       OR EXISTS { MATCH (:Conversation {user_id: $user_id}) } AS holds,
       p.erasing_since AS erasing_since
