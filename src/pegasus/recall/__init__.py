"""Recall: seeds, two-hop activation, budget, rendering."""
