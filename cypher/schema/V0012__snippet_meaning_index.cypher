// Snippets found by meaning (docs/decisions.md, "Recall that generalises"): a question often
// asks in other words than the memory said ("advice" for "brand identity is key"), and the
// full-text index finds only shared words. Snippets carry `embedding`, their raw unit vector as a
// list (the index needs one; `embedding_f32` stays the packed copy recall reads for ranking),
// and recall asks this index for the user's nearest snippets to the message's meaning.
// `user_id` is a filter property inside the index, as for keys (V0006): a search sees one
// user's snippets only. Full precision, 4x expansion, as key_centred. Snippets written before
// this version get `embedding` from their packed vector on migrate (`Store.index_snippets`).
CYPHER 25
CREATE VECTOR INDEX snippet_meaning IF NOT EXISTS
FOR (s:Snippet) ON s.embedding
WITH [s.user_id]
OPTIONS {indexConfig: {
  `vector.dimensions`: 384,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.type`: 'NONE',
  `vector.default_search_expansion_factor`: 4.0
}};
