// Large partitions: the vector index proposes, oversampled by the share of this user's keys
// in the whole index, then filtered to the user; the centred score decides (design §7.3).
CALL db.index.vector.queryNodes('key_embedding', $k, $vector) YIELD node, score
WHERE node.user_id = $user_id
RETURN node.id AS id, node.kind AS kind, node.entity_id AS entity_id, node.label AS label,
       node.embedding AS embedding
