// Renew this worker's lease on a conversation's close while the close runs (design §13): an
// extraction may outlast one lease, and another server's sweep must not take the close over
// while it still runs. Only the holder renews, and only while the conversation is closing;
// `renewed` false says the lease was lost (expired and taken over, or the close finished).
MATCH (c:Conversation {user_id: $user_id, id: $conversation_id})
WHERE c.status = 'closing' AND c.close_holder = $holder
SET c.close_lease_until = $now + duration({seconds: $lease_s})
RETURN true AS renewed
