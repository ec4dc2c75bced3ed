// A server shutting down lets go of the close it still runs (design §13): the lease is cleared,
// so another server's sweep, or this one's next start, takes the close over at once instead of
// after close_lease_s. Only this holder's lease: one another worker took meanwhile stays.
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
WHERE c.status = 'closing' AND c.close_holder = $holder
SET c.close_lease_until = null, c.close_holder = null
RETURN count(c) AS released
