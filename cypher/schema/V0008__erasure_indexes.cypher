// Forgetting a user (design §10) deletes every :Snippet of the user: without an index on
// user_id alone (the (user_id, id) constraint does not serve it) that was a scan of every
// tenant's snippets.
CREATE INDEX snippet_user IF NOT EXISTS FOR (s:Snippet) ON (s.user_id);
