// Seed candidates (design §7.3): for each word vector (already centred on the model's fixed
// centre), the user's nearest keys in the key_centred vector index, filtered to the user
// inside the index. The index scores cosine as (1 + cos) / 2; `score` is the cosine itself,
// which is the seed score. $words: [{word: i, vector: [...]}], $n: keys per word.
CYPHER 25
UNWIND $words AS w
CALL (w) {
  MATCH (k:Key)
    SEARCH k IN (VECTOR INDEX key_centred FOR w.vector WHERE k.user_id = $user_id LIMIT $n)
    SCORE AS s
  RETURN k, s
}
RETURN w.word AS word, k.id AS id, k.kind AS kind, k.entity_id AS entity_id,
       k.label AS label, 2.0 * s - 1.0 AS score
