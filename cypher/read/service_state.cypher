// What /metrics reports of the whole database (no user is named): recorded conversations whose
// close is waiting or has failed, those closed awaiting extraction, and when the daily decay
// pass last finished.
OPTIONAL MATCH (m:PegasusMaintenance {name: 'decay'})
RETURN COUNT { MATCH (c:Conversation) WHERE c.status = 'closing' } AS closes_pending,
       COUNT { MATCH (c:Conversation) WHERE c.status = 'failed' } AS closes_failed,
       COUNT { MATCH (c:Conversation) WHERE c.awaiting_extraction = true }
         AS awaiting_extraction,
       m.last_run_at.epochSeconds AS last_decay
