"""Operations: running and checking what Pegasus stands on. A local Neo4j server without Docker
(`neo4j_local`), erasure made final on disk (`compact`), start-up checks (`preflight`), and the
set-up checks `pegasus doctor` and `pegasus connect` report (`checks`, `doctor`)."""
