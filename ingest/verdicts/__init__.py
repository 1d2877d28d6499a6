"""Sources of verdicts that know a commit, not a turn: git's reverts and merges (``verdicts scan-git``).

One module per job (``diffs`` and ``rules`` are pure: an import-linter contract keeps I/O out):

- ``diffs``: a commit as values (``CommitDiff``: files, normalized added and removed lines) and the parser
  of ``git log -p`` output.
- ``rules``: reverts by message and by content, commits landed by sha, patch-id or content (squash), as
  ``Finding``s.
- ``wire``: the verdict events (``link`` form) the findings become.
- ``git``: the git I/O (``git log``, ``git patch-id``, the default branch).
- ``scan``: one scan of a repository: read, decide, skip what the cursor holds, publish, remember.
"""
