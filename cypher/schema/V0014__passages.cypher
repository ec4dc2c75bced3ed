// Passages (docs/design.md §7.11, "Remembered at once"): a recorded user turn is recallable from
// the user's other conversations as soon as it is recorded, before any LLM extracts it. Each user
// turn is cut into passages of a few sentences, one :Passage node each, holding the words
// (`text`), when they were said (`said_at`), the conversation and the turn's index in its
// transcript (`conversation_id`, `turn`), the embedding as a list (`embedding`), and two Lucene
// tokens: `user_key` (the user, as on snippets) and `conversation_key` (the conversation), so a
// full-text query is restricted to one user and leaves out the asking conversation inside the
// index. A passage is deleted when its turn is consolidated (committed by an extraction), when
// its conversation's turns pass their retention, and by every forget verb.
CREATE CONSTRAINT passage_key IF NOT EXISTS
FOR (p:Passage) REQUIRE (p.user_id, p.id) IS UNIQUE;

CREATE INDEX passage_conversation IF NOT EXISTS
FOR (p:Passage) ON (p.user_id, p.conversation_id);

CREATE FULLTEXT INDEX passage_text IF NOT EXISTS
FOR (p:Passage) ON EACH [p.text, p.user_key, p.conversation_key]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};

CYPHER 25
CREATE VECTOR INDEX passage_meaning IF NOT EXISTS
FOR (p:Passage) ON p.embedding
WITH [p.user_id]
OPTIONS {indexConfig: {
  `vector.dimensions`: 384,
  `vector.similarity_function`: 'cosine',
  `vector.quantization.type`: 'NONE',
  `vector.default_search_expansion_factor`: 4.0
}};
