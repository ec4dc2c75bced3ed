// Reading one user's partition (merge reads all of a user's entities; relation-label seeds scan
// a user's edges) must not scan every user's nodes: the composite (user_id, …) indexes do not
// serve a predicate on user_id alone, so each partitioned label gets its own user_id index.
CREATE INDEX entity_user IF NOT EXISTS FOR (n:Entity) ON (n.user_id);

CREATE INDEX conversation_user IF NOT EXISTS FOR (c:Conversation) ON (c.user_id);

CREATE INDEX merge_record_user IF NOT EXISTS FOR (m:MergeRecord) ON (m.user_id);
