// A user's memories for the person to see (design §10): every edge of the partition, or the
// edges of the given entities ($entity_ids), or the given edges ($rows: {edge_id, source_id,
// target_id}), of an entity of $kind at one end (the person's own node aside) when given,
// each with its state and strength at $now (strength_now: none without
// $lambdas) and the instant its shown words were said (its own
// :Snippet's said_at, else the edge's created_at), filtered to $states and to words said in
// [$said_from, $said_until) when given, one page at a time: ordered by source, relation,
// target, id, or most recently said first when $newest_first. A correction names what it
// corrects; a corrected version, when and through which surface the person corrected it;
// said_in is the conversation its shown words came from (null: the person's correction).
CALL () {
  WITH 1 AS one WHERE $entity_ids IS NULL AND $rows IS NULL
  MATCH (a:Entity {user_id: $user_id})-[r]->(b:Entity {user_id: $user_id})
  WHERE r.user_id = $user_id
  RETURN a, r, b
  UNION
  UNWIND coalesce($entity_ids, []) AS entity_id
  MATCH (:Entity {user_id: $user_id, id: entity_id})-[r]-(:Entity {user_id: $user_id})
  WHERE r.user_id = $user_id
  RETURN startNode(r) AS a, r, endNode(r) AS b
  UNION
  UNWIND coalesce($rows, []) AS row
  MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
        (b:Entity {user_id: $user_id, id: row.target_id})
  MATCH (a)-[r]->(b)
  WHERE r.id = row.edge_id AND r.user_id = $user_id
  RETURN a, r, b
}
WITH a, r, b, CASE
  WHEN r.retracted_at IS NOT NULL THEN 'retracted'
  WHEN r.superseded_at IS NOT NULL THEN 'superseded'
  WHEN coalesce(r.dormant, false) THEN 'dormant'
  WHEN r.expires_at IS NOT NULL AND r.expires_at <= $now THEN 'expired'
  ELSE 'current' END AS state
WHERE state IN $states
  AND ($kind IS NULL OR a.kind = $kind AND NOT coalesce(a.is_self, false)
       OR b.kind = $kind AND NOT coalesce(b.is_self, false))
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
WITH a, r, b, state, coalesce(s.said_at, r.created_at) AS said, s.conversation_id AS said_in
WHERE ($said_from IS NULL OR said >= $said_from) AND ($said_until IS NULL OR said < $said_until)
RETURN r.id AS id, a.id AS source_id, a.name AS source, type(r) AS relation, b.id AS target_id,
       b.name AS target, state, r.strength AS strength, r.strength_at_touch AS strength_at_touch,
       r.confidence AS confidence, toString(r.touched_at) AS touched_at,
       toString(r.created_at) AS created_at, toString(r.superseded_at) AS superseded_at,
       toString(r.retracted_at) AS retracted_at, r.stability AS stability,
       r.cardinality AS cardinality, coalesce(r.dormant, false) AS dormant,
       r.superseded_at IS NOT NULL AS superseded, coalesce(r.expired, false) AS expired,
       r.snippet AS snippet, r.conversations AS conversations, toString(said) AS said_at,
       toString(r.corrected_at) AS corrected_at, r.corrected_via AS corrected_via,
       r.corrects AS corrects, toString(r.expires_at) AS expires_at, said_in,
       coalesce(a.is_self, false) AS source_is_self, coalesce(b.is_self, false) AS target_is_self,
       CASE WHEN $lambdas IS NULL THEN null ELSE coalesce(@strength(r), r.strength) END
         AS strength_now
ORDER BY CASE WHEN $newest_first THEN said END DESC, source, relation, target, id
SKIP $skip LIMIT $limit
