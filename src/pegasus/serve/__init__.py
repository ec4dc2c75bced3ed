"""`pegasus serve`: the memory's HTTP API and a passive-memory proxy for OpenAI-compatible clients."""
