// Export, the first statement of its one transaction: the user's partition lock, held until the
// export ends. Every writer of the partition takes it (commits, corrections, forgets, undo, the
// import's swap), and Neo4j reads at read-committed isolation, so without it a file could hold
// half of a commit that landed while it was read. MATCH, not MERGE: an export writes nothing,
// not even an empty :Partition.
OPTIONAL MATCH (p:Partition {user_id: $user_id})
FOREACH (locked IN CASE WHEN p IS NULL THEN [] ELSE [p] END |
  SET locked._lock = true
  REMOVE locked._lock)
RETURN p.erasing_since AS erasing_since
