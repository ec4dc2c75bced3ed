// Import, step 1 (design §11): the staging partition an import writes into, apart from the
// user's own (no user id is longer than 200 characters: a staging id is). Who holds it and
// when it last moved tell the sweep whether an import is alive or was interrupted.
CREATE (p:Partition {user_id: $staging_id})
SET p.created_at = $now, p.version = 0, p.staging_for = $user_id, p.holder = $holder,
    p.heartbeat_at = datetime.realtime()
