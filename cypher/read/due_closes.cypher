// One user's conversations waiting to be closed whose next attempt is due ($now) and that no
// worker holds ($wall: the real time the leases are counted in).
MATCH (c:Conversation {user_id: $user_id})
WHERE c.status = 'closing' AND c.close_next_at <= $now
  AND (c.close_lease_until IS NULL OR c.close_lease_until < $wall)
RETURN c.id AS id
ORDER BY c.close_next_at
