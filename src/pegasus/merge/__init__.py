"""Merge and disambiguation: deterministic rules, LLM review, the commit plan."""
