// Snippets for relevance ranking (docs/design.md, "Recall"): one :Snippet node per memory edge,
// holding the edge's verbatim words, when they were said, and their embedding. The full-text
// (Lucene) index serves keyword matching, with English stemming ("dances" finds "dance");
// `user_key` is the user id as one Lucene token, so a query is restricted to one partition
// inside the index, not after it.
CREATE CONSTRAINT snippet_key IF NOT EXISTS
FOR (s:Snippet) REQUIRE (s.user_id, s.id) IS UNIQUE;

CREATE FULLTEXT INDEX snippet_text IF NOT EXISTS
FOR (s:Snippet) ON EACH [s.text, s.user_key]
OPTIONS {indexConfig: {`fulltext.analyzer`: 'english'}};
