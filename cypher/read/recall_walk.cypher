// One recall's walk in one Cypher call (design §7, "Round trips"): the spreading activation,
// the co-episode bonus, the hottest reached nodes, and the memory edges those nodes and the
// message's words offer. One call, not an activation query and a candidates query with the
// bonus and the choice of nodes in Python between them: one round trip and one plan per recall.
//
// 1. Activation.
// Two-hop spreading activation (docs/design.md, "Recall"), both directions, over current edges
// only (@current, cypher/fragments/current.cypher). A seed starts at its graded match
// ($seeds: [{id, act}]; a relation label's act goes to both ends of its current edges, the
// $fanout strongest of them):
//   contrib(u→v) = act(u) · strength(u,v) / Σ_{e∋u} strength(e) · $spread
// The sum runs over all of u's current edges, but u spreads along its $fanout strongest only
// (ties to the newer edge, then by its words, then by id: the same conversations loaded again,
// with other random ids, walk the same way; decisions.md, "Ties by what the memory says"): a hub (the user) with thousands of edges no longer drags its whole
// neighbourhood into every walk, and each edge left out would have carried at most
// act(u) · $spread / ($fanout + 1) (design, "Fan-out").
// A hub, a node with more than $hub_edges relationships (the count Neo4j keeps per node, read
// without touching them), is a sink: it is reached and scored but spreads nothing, since a
// share of a thousand edges is negligible and finding its strongest ones would read them all
// (design, "Hubs").
// Hop 1 spreads the seeds' activation; hop 2 spreads what each node received at hop 1, from
// the $hop2_sources hottest hop-1 nodes only (ties by name, then id; design, "Second hop").
// Contributions add up. One row comes back: the reached nodes with their score, the hop
// that first reached them and their forward/reverse shares, and every edge crossed (as lists
// per reached node: the caller flattens them; folding them into one list here with reduce()
// copied the list once per node).
// The far end of an edge is matched by label only (`other:Entity`): with its user_id in the
// pattern, the planner joined every entity of the user to each expanded node (Expand(Into),
// quadratic in the user's size). The seeds are looked up by the (user_id, id) constraint's
// index, by hint: the planner chose a scan of the user's entities per seed. A label's edges
// are found from the user's own entities, by hint too: the planner may otherwise scan that
// type's edges of every tenant, which grows with the others' graphs, not this user's.
// A label seed matches its edges by dynamic type (Cypher 25 `[r:$(label)]`): the planner reads
// only edges of that type, where a `type(r) = label` filter read all of the user's edges.
CYPHER 25
CALL () {
  UNWIND $walk.seeds AS seed
  MATCH (n:Entity {user_id: $user_id, id: seed.id})
  USING INDEX n:Entity(user_id, id)
  RETURN n, seed.act AS act
  UNION ALL
  UNWIND $walk.seed_labels AS seed
  CALL (seed) {
    MATCH (anchor:Entity {user_id: $user_id})
    USING INDEX anchor:Entity(user_id, id)
    WHERE anchor.id IN $walk.anchors AND COUNT { (anchor)--() } <= $hub_edges
    MATCH (anchor)-[r:$(seed.label)]-(:Entity)
    WHERE @current(r)
    WITH DISTINCT r ORDER BY r.strength DESC, r.created_at DESC, r.snippet, r.id LIMIT $fanout
    UNWIND [startNode(r), endNode(r)] AS n
    RETURN n
  }
  WITH n, seed WHERE n.id <> coalesce($walk.self_id, '')
  RETURN n, seed.act AS act
}
WITH n, max(act) AS act
WITH collect({node: n, act: act}) AS seeds
CALL (seeds) {
  UNWIND seeds AS seed
  WITH seed.node AS u, seed.act AS au
  WHERE COUNT { (u)--() } <= $hub_edges
  CALL (u) {
    MATCH (u)-[x]-(other)
    WHERE other:Entity AND @current(x)
    WITH x ORDER BY x.strength DESC, x.created_at DESC, x.snippet, x.id
    RETURN sum(x.strength) AS degree, collect(x)[..$fanout] AS strongest
  }
  WITH u, au, degree, strongest WHERE degree > 0
  UNWIND strongest AS r
  WITH r, au * r.strength / degree * $spread AS c, startNode(r) = u AS forward
  WITH CASE WHEN forward THEN endNode(r) ELSE startNode(r) END AS v, r, c, forward
  WITH v, sum(c) AS a, sum(CASE WHEN forward THEN c ELSE 0.0 END) AS f,
       sum(CASE WHEN forward THEN 0.0 ELSE c END) AS rv, collect(r.id) AS edges
  RETURN collect({node: v, a: a, f: f, r: rv}) AS hop1, collect(edges) AS hop1_edges
}
CALL (hop1) {
  UNWIND hop1 AS h
  WITH h ORDER BY round(h.a, 9) DESC, h.node.name, h.node.id LIMIT $hop2_sources
  WITH h.node AS w, h.a AS aw
  WHERE COUNT { (w)--() } <= $hub_edges
  CALL (w) {
    MATCH (w)-[x]-(other)
    WHERE other:Entity AND @current(x)
    WITH x ORDER BY x.strength DESC, x.created_at DESC, x.snippet, x.id
    RETURN sum(x.strength) AS degree, collect(x)[..$fanout] AS strongest
  }
  WITH w, aw, degree, strongest WHERE degree > 0
  UNWIND strongest AS r
  WITH r, aw * r.strength / degree * $spread AS c, startNode(r) = w AS forward
  WITH CASE WHEN forward THEN endNode(r) ELSE startNode(r) END AS v, r, c, forward
  WITH v, sum(c) AS a, sum(CASE WHEN forward THEN c ELSE 0.0 END) AS f,
       sum(CASE WHEN forward THEN 0.0 ELSE c END) AS rv, collect(r.id) AS edges
  RETURN collect({node: v, a: a, f: f, r: rv}) AS hop2, collect(edges) AS hop2_edges
}
// The nodes are summed in a subquery that does not see `crossed`: grouped next to it, every
// row held its own copy of the crossed list (quadratic memory).
CALL (seeds, hop1, hop2) {
  WITH [s IN seeds | {node: s.node, a: s.act, f: 0.0, r: 0.0, hop: 0, seed: 1}]
     + [h IN hop1 | {node: h.node, a: h.a, f: h.f, r: h.r, hop: 1, seed: 0}]
     + [h IN hop2 | {node: h.node, a: h.a, f: h.f, r: h.r, hop: 2, seed: 0}] AS rows
  UNWIND rows AS row
  WITH row.node AS n, sum(row.a) AS score, sum(row.f) AS forward, sum(row.r) AS reverse,
       min(row.hop) AS hop, max(row.seed) AS seed
  RETURN collect({
           id: n.id, name: n.name, kind: n.kind, conversations: coalesce(n.conversations, []),
           score: score, forward: forward, reverse: reverse, hop: hop, seed: seed = 1
         }) AS nodes
}
// 2. The co-episode bonus (design §7.7): +$co_episode_bonus once to each reached non-seed
// node that shares a conversation with another node at least $co_episode_threshold hot (hot
// as the activation left it). `nodes` come back with it.
CALL (nodes) {
  WITH nodes, [n IN nodes WHERE n.score >= $co_episode_threshold] AS hot
  UNWIND nodes AS n
  RETURN collect(n {.*, score: n.score + CASE
           WHEN NOT n.seed AND any(h IN hot WHERE h.id <> n.id
                                   AND any(c IN n.conversations WHERE c IN h.conversations))
           THEN $co_episode_bonus ELSE 0.0 END}) AS scored
}
// 3. The nodes that offer their edges: the $expand_nodes hottest at least $expand_threshold,
// the self node left out; ties by name, then id (scores rounded: sums in another order differ
// in the last bits).
CALL (scored) {
  UNWIND range(0, size(scored) - 1) AS i
  WITH scored[i] AS n, i WHERE n.id <> coalesce($walk.self_id, '') AND n.score >= $expand_threshold
  WITH n, i ORDER BY round(n.score, 9) DESC, n.name, n.id LIMIT $expand_nodes
  RETURN collect(n.id) AS expand
}
// 4. The memory edges a recall may show (docs/design.md, "Recall"): the current edges of the
// nodes chosen above, the edges whose snippets the full-text index finds for the message's
// words ($walk.query, restricted to this user by its user_key term; null for none), and the edges
// of the $meaning_limit snippets nearest to the message's meaning ($walk.meaning, a unit vector;
// null for none) in the snippet_meaning index, filtered to this user inside the index (a
// question often asks in other words than the memory said), whose cosine reaches
// $meaning_floor (an unrelated message finds nothing), and the edges of snippets said on the
// days the message names. With $history, superseded edges found
// either way join, each with the date it ended. Dormant and expired edges are never walked nor
// expanded; with $faded, a snippet found by its own words, or an entity the message names,
// brings them back (@recallable), an expired one with the day it ended. Meaning is
// association, as the walk is, so it brings back no faded memory; a name matched at least
// $named_match is a naming. One row per snippet of each edge (its own words and its other sightings'),
// each with its keyword score; ranking shows an edge once, with its best.
// One row comes back: the nodes (scored with the bonus), the edges crossed, the nodes expanded
// and the candidates. Instants go out as epoch seconds: hydrating three driver DateTimes per row was most of a
// recall's time.
CALL (expand) {
  CALL (expand) {
    UNWIND expand AS node_id
    MATCH (:Entity {user_id: $user_id, id: node_id})-[r]-(:Entity {user_id: $user_id})
    WHERE @current(r)
    RETURN r, null AS hit
    UNION ALL
    // A named entity's faded memories (design §7.6, "Faded memories"): an entity seed whose
    // name or alias a word of the message matched at least $named_match is named, a direct
    // cue like the memory's own words; it offers its $fanout newest faded memories (dormant,
    // expired, ended with nothing in their place), not walked. A hub is not read for them.
    UNWIND CASE WHEN $faded THEN $walk.seeds ELSE [] END AS seed
    WITH seed WHERE seed.act >= $named_match
    CALL (seed) {
      MATCH (n:Entity {user_id: $user_id, id: seed.id})
      USING INDEX n:Entity(user_id, id)
      WHERE COUNT { (n)--() } <= $hub_edges
      MATCH (n)-[r]-(:Entity {user_id: $user_id})
      WHERE @recallable(r) AND NOT @current(r)
      WITH r ORDER BY r.created_at DESC, r.snippet, r.id LIMIT $fanout
      RETURN r
    }
    RETURN r, null AS hit
    UNION ALL
    CALL () {
      WITH 1 AS one WHERE $walk.query IS NOT NULL
      CALL db.index.fulltext.queryNodes('snippet_text', $walk.query, {limit: $text_limit})
        YIELD node, score
      RETURN node, score
      UNION ALL
      WITH 1 AS one WHERE $walk.meaning IS NOT NULL
      MATCH (node:Snippet)
        SEARCH node IN (VECTOR INDEX snippet_meaning FOR $walk.meaning WHERE node.user_id = $user_id
                        LIMIT $meaning_limit)
        SCORE AS similarity
      // The index scores cosine as (1 + cos) / 2.
      WITH node WHERE 2.0 * similarity - 1.0 >= $meaning_floor
      RETURN node, null AS score
      UNION ALL
      // The days the message names ($walk.when: [{start, end}], null for none): the
      // $when_limit snippets said in each, nearest to the message's meaning first, found by the
      // (user_id, said_at) index; at most $when_scan of a span are compared (the first said),
      // so a month of a huge partition costs what a busy day does.
      UNWIND coalesce($walk.when, []) AS span
      CALL (span) {
        MATCH (node:Snippet {user_id: $user_id})
        USING INDEX node:Snippet(user_id, said_at)
        WHERE node.said_at >= span.start AND node.said_at < span.end
        WITH node LIMIT $when_scan
        RETURN node
          ORDER BY vector.similarity.cosine(node.embedding, $walk.meaning) DESC, node.said_at,
                   node.text
          LIMIT $when_limit
      }
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
  WITH r, a, b, s, [h IN hits WHERE h.id = s.id | h.score] AS hit_scores
  RETURN collect({
           id: r.id, source_id: a.id, source: a.name, label: type(r), target_id: b.id,
           target: b.name, snippet: coalesce(s.text, r.snippet),
           said_at: coalesce(s.said_at, r.created_at).epochSeconds,
           since: r.created_at.epochSeconds,
           until: CASE WHEN r.superseded_at IS NOT NULL THEN r.superseded_at.epochSeconds
                       WHEN r.expires_at <= $now THEN r.expires_at.epochSeconds END,
           packed: s.embedding_f32, text_score: coalesce(hit_scores[0], 0.0)
         }) AS candidates
}
RETURN scored AS nodes, hop1_edges + hop2_edges AS crossed, expand, candidates
