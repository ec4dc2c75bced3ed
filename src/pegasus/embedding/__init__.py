"""Embedding: the sentence model run on ONNX Runtime (`encoder`), word and key embeddings with
their caches (`embed`), the fixed centre of the key space (`centring`), and stored vectors kept
the running model's (`vectors`)."""
