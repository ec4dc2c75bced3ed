// Import, the sweep: every staging partition, with who holds it and when it last moved.
MATCH (p:Partition)
WHERE p.staging_for IS NOT NULL
RETURN p.user_id AS staging_id, p.holder AS holder,
       duration.inSeconds(p.heartbeat_at, datetime.realtime()).seconds AS idle_s
