// The most recently written keys and snippets with their stored raw vectors, for the check
// that stored vectors are the running embedder's (pegasus.embedding.vectors). Migration only: it reads
// across partitions, as centring does, and returns no user's words beyond this process.
CALL () {
  MATCH (k:Key)
  WHERE k.embedding_f32 IS NOT NULL OR k.embedding IS NOT NULL
  RETURN 'key' AS node, k.kind AS kind, k.text AS text, k.label AS label,
         k.embedding_f32 AS packed, CASE WHEN k.embedding_f32 IS NULL THEN k.embedding END
         AS embedding, k.created_at AS written
  ORDER BY written DESC
  LIMIT $sample
  UNION ALL
  MATCH (s:Snippet)
  WHERE s.embedding_f32 IS NOT NULL
  RETURN 'snippet' AS node, null AS kind, s.text AS text, null AS label,
         s.embedding_f32 AS packed, null AS embedding, s.said_at AS written
  ORDER BY written DESC
  LIMIT $sample
}
RETURN node, kind, text, label, packed, embedding
