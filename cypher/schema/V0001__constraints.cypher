// Identity of every node Pegasus owns is (user_id, id): one user's memory is one partition.
CREATE CONSTRAINT entity_identity IF NOT EXISTS
FOR (n:Entity) REQUIRE (n.user_id, n.id) IS UNIQUE;

CREATE CONSTRAINT conversation_identity IF NOT EXISTS
FOR (c:Conversation) REQUIRE (c.user_id, c.id) IS UNIQUE;

CREATE CONSTRAINT key_identity IF NOT EXISTS
FOR (k:Key) REQUIRE (k.user_id, k.id) IS UNIQUE;

CREATE CONSTRAINT merge_record_identity IF NOT EXISTS
FOR (m:MergeRecord) REQUIRE (m.user_id, m.id) IS UNIQUE;

// One Partition node per user: holds the self node's id and the key mean used for centring,
// and is locked at the start of every write so commits of one user serialise.
CREATE CONSTRAINT partition_identity IF NOT EXISTS
FOR (p:Partition) REQUIRE p.user_id IS UNIQUE;
