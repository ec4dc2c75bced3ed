// An import refuses an id another user's partition already holds (design §11): finding one by
// id alone must not scan every user's nodes (the identity constraints lead with user_id).
CREATE INDEX entity_id IF NOT EXISTS FOR (n:Entity) ON (n.id);

CREATE INDEX snippet_edge_id IF NOT EXISTS FOR (s:Snippet) ON (s.edge_id);

CREATE INDEX merge_record_id IF NOT EXISTS FOR (m:MergeRecord) ON (m.id);
