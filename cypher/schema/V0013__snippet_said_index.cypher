// Memories said when the message says (docs/decisions.md, "Memories said when the message
// says"): "what was I doing on December 4?" finds the snippets said that day by this index,
// one user's range of instants at a time.
CREATE INDEX snippet_said IF NOT EXISTS FOR (s:Snippet) ON (s.user_id, s.said_at);
