// Two-hop spreading activation (docs/design.md, "Recall"), both directions, over current edges
// only (@current, cypher/fragments/current.cypher). A seed starts at its graded match
// ($seeds: [{id, act}]; a relation label's act goes to both ends of its current edges, the
// $fanout strongest of them):
//   contrib(u→v) = act(u) · strength(u,v) / Σ_{e∋u} strength(e) · $spread
// The sum runs over all of u's current edges, but u spreads along its $fanout strongest only
// (ties by edge id): a hub (the user) with thousands of edges no longer drags its whole
// neighbourhood into every walk, and each edge left out would have carried at most
// act(u) · $spread / ($fanout + 1) (design, "Fan-out").
// A hub, a node with more than $hub_edges relationships (the count Neo4j keeps per node, read
// without touching them), is a sink: it is reached and scored but spreads nothing, since a
// share of a thousand edges is negligible and finding its strongest ones would read them all
// (design, "Hubs").
// Hop 1 spreads the seeds' activation; hop 2 spreads what each node received at hop 1, from
// the $hop2_sources hottest hop-1 nodes only (ties by id; design, "Second hop").
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
  UNWIND $seeds AS seed
  MATCH (n:Entity {user_id: $user_id, id: seed.id})
  USING INDEX n:Entity(user_id, id)
  RETURN n, seed.act AS act
  UNION ALL
  UNWIND $seed_labels AS seed
  CALL (seed) {
    MATCH (anchor:Entity {user_id: $user_id})
    USING INDEX anchor:Entity(user_id, id)
    WHERE anchor.id IN $anchors AND COUNT { (anchor)--() } <= $hub_edges
    MATCH (anchor)-[r:$(seed.label)]-(:Entity)
    WHERE @current(r)
    WITH DISTINCT r ORDER BY r.strength DESC, r.id LIMIT $fanout
    UNWIND [startNode(r), endNode(r)] AS n
    RETURN n
  }
  WITH n, seed WHERE n.id <> coalesce($self_id, '')
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
    WITH x ORDER BY x.strength DESC, x.id
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
  WITH h ORDER BY h.a DESC, h.node.id LIMIT $hop2_sources
  WITH h.node AS w, h.a AS aw
  WHERE COUNT { (w)--() } <= $hub_edges
  CALL (w) {
    MATCH (w)-[x]-(other)
    WHERE other:Entity AND @current(x)
    WITH x ORDER BY x.strength DESC, x.id
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
RETURN nodes, hop1_edges + hop2_edges AS crossed
