// An edge the message's own words may bring back (design §7.6, "Faded memories"): this user's,
// not retracted, not corrected, and not replaced by another. Dormant and expired edges are
// recallable: decay hides a memory from the walk and from memory lines, but a message that
// finds its words in the full-text index is a direct cue, and the faded memory is quoted with
// its date (an expired one with the day it ended). So is an edge that ended with nothing in
// its place ("I lost my job at Door Dash", design §3, "Past facts"): no current memory says
// otherwise, and it is quoted with the day it ended. An edge replaced by another (Acme by
// Nimbus) still comes back only as history.
EDGE.user_id = $user_id AND EDGE.retracted_at IS NULL AND EDGE.corrected_at IS NULL
  AND (EDGE.superseded_at IS NULL OR EDGE.superseded_by IS NULL)
