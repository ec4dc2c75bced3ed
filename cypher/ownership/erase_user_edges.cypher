// Forget everything, step 2: the user's memory edges, in batches (a 100,000-edge user never
// meets the transaction memory limit). Auto-commit: CALL … IN TRANSACTIONS.
MATCH (:Entity {user_id: $user_id})-[r]->()
CALL (r) {
  DELETE r
} IN TRANSACTIONS OF $batch ROWS
