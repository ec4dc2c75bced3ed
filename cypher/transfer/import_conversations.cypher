// Import, a batch of conversations with their properties, linked to the entities they mention.
UNWIND $rows AS row
CREATE (c:Conversation {user_id: $user_id, id: row.id})
SET c += row.props
WITH c, row
UNWIND row.mentions AS entity_id
MATCH (n:Entity {user_id: $user_id, id: entity_id})
CREATE (c)-[:MENTIONS]->(n)
