"""Extraction: the LLM extractor with staging, and the deterministic cleaning pass."""
