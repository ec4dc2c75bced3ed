// An edge the message's own words may bring back (design §7.6, "Faded memories"): this user's,
// not retracted, not superseded. Dormant and expired edges are recallable: decay hides a
// memory from the walk and from memory lines, but a message that finds its words in the
// full-text index is a direct cue, and the faded memory is quoted with its date (an expired
// one with the day it ended). Superseded edges still come back only as history.
EDGE.user_id = $user_id AND EDGE.retracted_at IS NULL AND EDGE.superseded_at IS NULL
