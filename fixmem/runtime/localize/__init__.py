"""Localization's I/O side: each checkout's index listed by git, cached, built in a child process.

``checkout`` (list, read, cache per checkout root and HEAD), ``build`` (the child process that builds
one), ``keeper`` (the indexes a long-lived process keeps warm, and the one-shot form for a short-lived
client). What a file's facts are and how an index localizes a task is ``store.localize``'s.
"""
