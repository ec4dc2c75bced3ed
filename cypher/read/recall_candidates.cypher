// The memory edges a recall may show (docs/design.md, "Recall"): the current edges of the
// reached nodes ($node_ids, the self node left out), the edges whose snippets the full-text
// index finds for the message's words ($query, restricted to this user by its user_key term;
// null for none), and the edges of the $meaning_limit snippets nearest to the message's
// meaning ($meaning, a unit vector; null for none) in the snippet_meaning index, filtered to
// this user inside the index (a question often asks in other words than the memory said),
// whose cosine reaches $meaning_floor (an unrelated message finds nothing). With $history,
// superseded edges found either way join, each with the date it ended. Dormant and expired
// edges are never walked nor expanded; with $faded, a snippet found by its own words brings
// them back (@recallable), an expired one with the day it ended. Meaning is association, as
// the walk is, so it brings back no faded memory. One row per snippet of each edge (its own
// words and its other sightings'), each with its keyword score; ranking shows an edge once,
// with its best.
CYPHER 25
CALL () {
  UNWIND $node_ids AS node_id
  MATCH (:Entity {user_id: $user_id, id: node_id})-[r]-(:Entity {user_id: $user_id})
  WHERE @current(r)
  RETURN r, null AS hit
  UNION ALL
  CALL () {
    WITH 1 AS one WHERE $query IS NOT NULL
    CALL db.index.fulltext.queryNodes('snippet_text', $query, {limit: $text_limit})
      YIELD node, score
    RETURN node, score
    UNION ALL
    WITH 1 AS one WHERE $meaning IS NOT NULL
    MATCH (node:Snippet)
      SEARCH node IN (VECTOR INDEX snippet_meaning FOR $meaning WHERE node.user_id = $user_id
                      LIMIT $meaning_limit)
      SCORE AS similarity
    // The index scores cosine as (1 + cos) / 2.
    WITH node WHERE 2.0 * similarity - 1.0 >= $meaning_floor
    RETURN node, null AS score
  }
  WITH node, score WHERE node.user_id = $user_id
  // The snippet names both ends: its edge is found between them from the end with fewer
  // edges (the self node's tens of thousands are never scanned).
  MATCH (a:Entity {user_id: $user_id, id: node.source_id}),
        (b:Entity {user_id: $user_id, id: node.target_id})
  MATCH (a)-[r]->(b)
  WHERE r.id = node.edge_id
    AND (@current(r) OR $history AND @live(r) OR $faded AND score IS NOT NULL
         AND @recallable(r))
  RETURN r, CASE WHEN score IS NOT NULL THEN {id: node.id, score: score} END AS hit
}
WITH r, collect(hit) AS hits
MATCH (a:Entity)-[r]->(b:Entity)
OPTIONAL MATCH (s:Snippet {user_id: $user_id, edge_id: r.id})
WITH r, a, b, s, [h IN hits WHERE h.id = s.id | h.score] AS scored
// Instants go out as epoch seconds: hydrating three driver DateTimes per row was most of a
// recall's time.
RETURN r.id AS id, a.id AS source_id, a.name AS source, type(r) AS label, b.id AS target_id,
       b.name AS target, coalesce(s.text, r.snippet) AS snippet,
       coalesce(s.said_at, r.created_at).epochSeconds AS said_at,
       r.created_at.epochSeconds AS since,
       CASE WHEN r.superseded_at IS NOT NULL THEN r.superseded_at.epochSeconds
            WHEN r.expires_at <= $now THEN r.expires_at.epochSeconds END AS until,
       s.embedding_f32 AS packed, coalesce(scored[0], 0.0) AS text_score
