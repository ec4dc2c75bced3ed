// Erase entities: the node (with its conversation links) and the seed keys of its names.
// Their memory edges are erased first (forget_edges), so none is left dangling.
UNWIND $entity_ids AS entity_id
OPTIONAL MATCH (k:Key {user_id: $user_id, kind: 'entity', entity_id: entity_id})
DETACH DELETE k
WITH DISTINCT entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
DETACH DELETE n
RETURN count(*) AS forgotten
