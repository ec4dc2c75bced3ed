// What one memory's history adds to its listing (design §10): all its stored properties, when
// the words it shows were said and in which conversation, the memory that superseded it, and
// its strength decayed to $now (the stored one when it has no S0 or touched_at).
UNWIND $rows AS row
MATCH (a:Entity {user_id: $user_id, id: row.source_id}),
      (b:Entity {user_id: $user_id, id: row.target_id})
MATCH (a)-[r]->(b)
WHERE r.id = row.edge_id AND r.user_id = $user_id
OPTIONAL MATCH (s:Snippet {user_id: $user_id, id: r.id})
OPTIONAL MATCH (by:Snippet {user_id: $user_id, id: r.superseded_by})
OPTIONAL MATCH (bya:Entity {user_id: $user_id, id: by.source_id})-[byr]->
               (byb:Entity {user_id: $user_id, id: by.target_id})
WHERE byr.id = r.superseded_by
RETURN properties(r) AS props, s.said_at AS said_at, s.conversation_id AS said_in,
       coalesce(@strength(r), r.strength) AS strength_now,
       CASE WHEN byr IS NULL THEN null
            ELSE bya.name + ' -[' + type(byr) + ']-> ' + byb.name END AS superseded_by_line
