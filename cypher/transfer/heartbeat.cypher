// Import, after each batch: the staging partition's holder is alive (the sweep leaves it).
MATCH (p:Partition {user_id: $staging_id})
SET p.heartbeat_at = datetime.realtime()
