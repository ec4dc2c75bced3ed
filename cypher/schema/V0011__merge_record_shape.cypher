// Merge records are one typed model from this version on (src/pegasus/merge/records.py). Those
// written before came in two shapes: a merge by the rules or by review kept the batch's cleaned
// entity (no id, no conversations), a merge by hand the stored one (and no conversation id).
// Each is marked here; `Memory.migrate` rewrites it in the one shape (Cypher cannot read the
// JSON text it holds) and takes the mark off. A record already in the one shape is unchanged.
MATCH (m:MergeRecord)
CALL (m) {
  SET m:MergeRecordToUpgrade
} IN TRANSACTIONS OF 5000 ROWS;
