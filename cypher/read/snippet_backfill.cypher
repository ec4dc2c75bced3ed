// Edges V0009 marked (seen in several conversations before every sighting's words had a
// snippet), a batch at a time, for Memory.migrate.
MATCH (m:SnippetBackfill)
RETURN m.user_id AS user_id, m.edge_id AS edge_id, m.source_id AS source_id,
       m.target_id AS target_id
LIMIT $batch
