// The marks of edges whose sightings' snippets are now written ({user_id, edge_id}).
UNWIND $rows AS row
MATCH (m:SnippetBackfill {user_id: row.user_id, edge_id: row.edge_id})
DELETE m
