"""The write library every writer shares (commit, close, forget, correct, undo, import): the
partition lock, the stored entities, keys, reinforcement. Each runs in its caller's write
transaction; the commit driver (`pegasus.commit`) is one of its users, not its home."""
