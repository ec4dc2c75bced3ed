// Merge compares names within one user's partition; recall lists a user's keys.
CREATE INDEX entity_user_name IF NOT EXISTS FOR (n:Entity) ON (n.user_id, n.name);

CREATE INDEX entity_user_kind IF NOT EXISTS FOR (n:Entity) ON (n.user_id, n.kind);

CREATE INDEX key_user IF NOT EXISTS FOR (k:Key) ON (k.user_id);

CREATE INDEX key_user_label IF NOT EXISTS FOR (k:Key) ON (k.user_id, k.label);

CREATE INDEX merge_record_user_status IF NOT EXISTS FOR (m:MergeRecord) ON (m.user_id, m.status);
