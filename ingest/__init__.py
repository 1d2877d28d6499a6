"""Ingest: the turn-event schema, the publisher SDK, the stream consumer, dead letters, importers.

Knows nothing downstream: it imports neither ``workers`` nor ``store``.
"""
