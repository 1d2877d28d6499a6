"""Persistence: the bytes on disk. ``fixlog`` (the JSONL log and its index: read, append, rewrite),
``fsio`` (durable appends, atomic replaces, locks, temp files), ``rotation`` (which entries a full log
keeps), ``forgotten`` (ids ``forget`` deleted), ``export`` (a log to and from a portable JSONL file).
"""
