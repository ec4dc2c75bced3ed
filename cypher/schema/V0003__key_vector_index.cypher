// Seed keys (entity names, aliases, relation phrases) of every user, normalised
// all-MiniLM-L6-v2 vectors. Recall filters by user and rescores centred (design §7.3).
CREATE VECTOR INDEX key_embedding IF NOT EXISTS
FOR (k:Key) ON k.embedding
OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}};
