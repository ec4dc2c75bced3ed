// Seed candidates (design §7.3), with what a recall needs of the partition (read/partition_state):
// whether the user has keys, and the self node's names (design §7.1), so that a search on its
// own (`RecallEngine.seeds`) needs no other statement. For each word vector (already
// centred on the model's fixed centre), the user's nearest keys in the key_centred vector
// index, filtered to the user inside the index; none when the user has no keys. The index
// scores cosine as (1 + cos) / 2; `score` is the cosine itself, which is the seed score.
// $search.words: [{word: i, vector: [...]}], $n: keys per word.
// And the passages of recorded turns not consolidated yet (design §7.11), found by the message's
// words ($search.passage_query: a Lucene query restricted to this user and leaving out the
// asking conversation by its tokens; null for none) and by its meaning ($search.meaning, a unit
// vector, null for none: the $search.passage_scan nearest of this user's passages in the
// passage_meaning index, filtered to the user inside it, whose cosine reaches
// $search.meaning_floor), never the asking conversation's nor those it continues
// ($search.exclude, a list: `chat.3` leaves out `chat` and `chat.2`): their words are in
// the chat already (the scan is wider than what is kept, so the asking conversation's own
// passages, nearest of all, do not crowd the others out). A user with no partition yet (nothing committed) still gets a row: their
// recorded turns are all they have.
CYPHER 25
OPTIONAL MATCH (p:Partition {user_id: $user_id})
OPTIONAL MATCH (me:Entity {user_id: $user_id, id: p.self_id})
CALL (p) {
  UNWIND CASE WHEN coalesce(p.key_count, 0) > 0 THEN $search.words ELSE [] END AS w
  CALL (w) {
    MATCH (k:Key)
      SEARCH k IN (VECTOR INDEX key_centred FOR w.vector WHERE k.user_id = $user_id LIMIT $n)
      SCORE AS s
    RETURN k, s
  }
  RETURN collect({word: w.word, id: k.id, kind: k.kind, entity_id: k.entity_id,
                  label: k.label, score: 2.0 * s - 1.0}) AS keys
}
CALL () {
  CALL () {
    WITH 1 AS one WHERE $search.passage_query IS NOT NULL
    CALL db.index.fulltext.queryNodes('passage_text', $search.passage_query,
                                      {limit: $search.passage_limit})
      YIELD node, score
    RETURN node, score
    UNION ALL
    WITH 1 AS one WHERE $search.meaning IS NOT NULL
    MATCH (node:Passage)
      SEARCH node IN (VECTOR INDEX passage_meaning FOR $search.meaning
                      WHERE node.user_id = $user_id LIMIT $search.passage_scan)
      SCORE AS similarity
    WITH node WHERE 2.0 * similarity - 1.0 >= $search.meaning_floor
    RETURN node, null AS score
  }
  WITH node, max(score) AS score
  WHERE node.user_id = $user_id AND NOT node.conversation_id IN $search.exclude
  RETURN collect({id: node.id, conversation_id: node.conversation_id, text: node.text,
                  said_at: node.said_at.epochSeconds, text_score: score,
                  dense: 2.0 * vector.similarity.cosine(node.embedding, $search.meaning) - 1.0
                 }) AS passages
}
RETURN p.key_count AS key_count, p.self_id AS self_id, me.name AS self_name,
       coalesce(me.aliases, []) AS self_aliases, keys, passages
