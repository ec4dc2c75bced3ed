// Seed candidates (design §7.3), with what a recall needs of the partition (read/partition_state):
// whether the user has keys, and the self node's names (design §7.1), so that a search on its
// own (`RecallEngine.seeds`) needs no other statement. For each word vector (already
// centred on the model's fixed centre), the user's nearest keys in the key_centred vector
// index, filtered to the user inside the index; none when the user has no keys. The index
// scores cosine as (1 + cos) / 2; `score` is the cosine itself, which is the seed score.
// $words: [{word: i, vector: [...]}], $n: keys per word. One row; no partition, no row.
CYPHER 25
MATCH (p:Partition {user_id: $user_id})
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
RETURN p.key_count AS key_count, p.self_id AS self_id, me.name AS self_name,
       coalesce(me.aliases, []) AS self_aliases, keys
