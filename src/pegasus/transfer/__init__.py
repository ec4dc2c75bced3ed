"""Taking a user's memory along (design §11): export to a versioned JSON Lines file, import
into an empty partition of any server, under any user id. Embeddings are derived data: import
computes them again."""
