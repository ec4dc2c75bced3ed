// Import, the swap's first statement: one lock for every import's swap on this database, so
// two imports bringing the same ids into two users' partitions at once cannot both pass the
// check that no other partition holds them (the second swap, after the first committed, sees
// its ids: transfer/taken_by_others). A swap is one short transaction; imports of one server
// rarely overlap.
MERGE (l:PegasusMaintenance {name: 'import-swap'})
SET l._lock = true
REMOVE l._lock
