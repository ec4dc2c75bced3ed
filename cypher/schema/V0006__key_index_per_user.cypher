// Seed matching inside the vector index, one user at a time (design §7.3, Neo4j 2025+).
// Keys carry `centred`: their embedding minus the model's fixed centre (pegasus.centring),
// so the index's cosine is the seed score itself. `user_id` is stored in the index as a
// filter property: a search names the user and sees that user's keys only, however many
// other tenants share their names. Full-precision vectors (no quantization: 2026 quantizes by
// default), so the scores are exact, and a search explores 4x the candidates it returns
// (the default is 1x), so the approximate graph search rarely misses a near key. The index of V0003 (raw embeddings, no
// filter) goes; `Store.migrate` then centres every key written before this version.
DROP INDEX key_embedding IF EXISTS;

CYPHER 25
CREATE VECTOR INDEX key_centred IF NOT EXISTS
FOR (k:Key) ON k.centred
WITH [k.user_id]
OPTIONS {indexConfig: {
  `vector.dimensions`: 384,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.type`: 'NONE',
  `vector.default_search_expansion_factor`: 4.0
}};

CREATE INDEX key_centre IF NOT EXISTS FOR (k:Key) ON (k.centre_id);
