// Forget everything, step 4: the Partition node itself, once nothing else of the user is
// left (a commit after this starts a new, empty partition).
MATCH (p:Partition {user_id: $user_id})
WHERE NOT EXISTS { MATCH (n:Entity {user_id: $user_id}) }
  AND NOT EXISTS { MATCH (n:Conversation {user_id: $user_id}) }
DETACH DELETE p
RETURN count(*) AS forgotten
