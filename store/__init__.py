"""The per-project JSONL fix log: append, rotation, index, recall, prompt block, stats, forget.

A library with no Redis in it; it imports neither ``ingest`` nor ``workers``.
"""
