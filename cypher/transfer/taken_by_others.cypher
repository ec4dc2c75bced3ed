// Import, inside the swap (after transfer/lock_swaps): one id of the staging partition that
// another user's partition holds by now (taken while this import was written), else nothing.
// The same comparison as transfer/taken_ids, over what the staging holds.
MATCH (n:Entity {user_id: $staging_id})
WHERE EXISTS { MATCH (o:Entity {id: n.id})
               WHERE o.user_id <> $user_id AND NOT o.user_id STARTS WITH $staging }
RETURN n.id AS id, 'entity' AS kind
LIMIT 1
UNION
MATCH (s:Snippet {user_id: $staging_id})
WHERE EXISTS { MATCH (o:Snippet {edge_id: s.edge_id})
               WHERE o.user_id <> $user_id AND NOT o.user_id STARTS WITH $staging }
RETURN s.edge_id AS id, 'memory' AS kind
LIMIT 1
UNION
MATCH (m:MergeRecord {user_id: $staging_id})
WHERE EXISTS { MATCH (o:MergeRecord {id: m.id})
               WHERE o.user_id <> $user_id AND NOT o.user_id STARTS WITH $staging }
RETURN m.id AS id, 'merge_record' AS kind
LIMIT 1
