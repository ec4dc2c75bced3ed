// What a recall injects (SPEC §7.9): every current edge between two fired nodes, and, for the
// hot nodes, their strongest current incident edges with snippets.
MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
WHERE a.id IN $fired_ids AND b.id IN $fired_ids
  AND r.user_id = $user_id AND r.superseded_at IS NULL AND NOT coalesce(r.dormant, false)
  AND (r.expires_at IS NULL OR r.expires_at > $now)
WITH collect({id: r.id, source_id: a.id, source: a.name, label: type(r), target: b.name,
              strength: r.strength}) AS memory
CALL () {
  UNWIND $hot_ids AS hot_id
  MATCH (h:Entity {user_id: $user_id, id: hot_id})-[r]-(:Entity {user_id: $user_id})
  WHERE r.user_id = $user_id AND r.superseded_at IS NULL AND NOT coalesce(r.dormant, false)
    AND (r.expires_at IS NULL OR r.expires_at > $now)
  // Ties: the more recently touched memory first, then by its words (never a random id).
  WITH hot_id, r ORDER BY r.strength DESC, r.touched_at DESC, r.snippet, r.id
  WITH hot_id, collect({snippet: r.snippet, strength: r.strength, id: r.id,
                        source_id: startNode(r).id})[0..$per_node] AS snippets
  RETURN collect({id: hot_id, snippets: snippets}) AS context
}
RETURN memory, context
