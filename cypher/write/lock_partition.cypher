// Opens a write on one user's partition. Writing a property takes the Partition node's write
// lock until the transaction ends, so concurrent commits of one user run one after the other
// (no duplicate entities); removing it again leaves the node unchanged. `epoch` (set once) and
// `version` (bumped by every commit and undo) name the partition's state, so a process may
// reuse what it read of an unchanged partition (design §5, "Snapshots"). `erasing_since` is
// set while the whole partition is being forgotten (design §10), `importing_since` while a
// memory is imported into it (§11): writers refuse then.
MERGE (p:Partition {user_id: $user_id})
ON CREATE SET p.created_at = $now, p.version = 0
SET p._lock = true, p.epoch = coalesce(p.epoch, randomUUID())
REMOVE p._lock
RETURN p.self_id AS self_id, p.version AS version, p.epoch AS epoch,
       p.erasing_since AS erasing_since, p.importing_since AS importing_since,
       p.key_count AS key_count
