"""What git says of a fix: reverted (by the message or by content) or landed on the default branch (pure).

Rules this file obeys (values in, values out: no git, no clock, no Redis):

- **Revert by message**: a commit whose message holds git's ``This reverts commit <sha>`` line reverts
  that commit (a prefix of 7+ hex digits is resolved against the commits known).
- **Revert by content** (message hidden or rewritten): a later commit *undoes* a fix when, counting only
  informative lines (``UndoRule.min_chars`` letters or digits at least: ``}`` or ``end`` tell nothing),
  the fix's added lines it removes plus the fix's removed lines it adds (multisets) cover at least
  ``min_coverage`` of the fix's informative lines, at least ``min_lines`` of them, and make up at least
  ``min_purity`` of the later commit's own informative lines. Of several earlier commits a commit
  undoes, the best covered is the one reverted (ties: the latest). The rule's figures are chosen on the
  tuning half of ``evals/verdicts`` (docs/decisions/0057-git-revert-by-content.md).
- **Landed**: every commit reachable from the default branch landed (by sha); a branch commit not on it
  landed when a default-branch commit has the same ``git patch-id --stable`` (a rebase or cherry-pick),
  or by content (a squash merge) when one default-branch commit after it holds ``SquashRule.min_containment``
  of its informative lines and no other comes within ``margin`` of that (a tie included; else: abstain,
  no verdict), or by its branch: when every later commit of its branch that was found landed in one and
  the same default-branch commit (a squash lands the branch's last state, not each step).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from ingest.verdicts.diffs import CommitDiff

_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{7,64})", re.IGNORECASE)
_ALNUM = re.compile(r"[0-9A-Za-z]")


@dataclass(frozen=True)
class UndoRule:
    """When a later commit counts as a revert of an earlier one by content (see the module docstring)."""

    min_coverage: float = 0.6  # the four figures: chosen on the tuning half of evals/verdicts
    min_purity: float = 0.7
    min_lines: int = 1
    min_chars: int = 5


@dataclass(frozen=True)
class SquashRule:
    """When a default-branch commit counts as the squash merge of a branch commit (module docstring)."""

    min_containment: float = 0.5  # the four figures: chosen on the tuning half of evals/verdicts
    margin: float = 0.2
    min_lines: int = 1
    min_chars: int = 5


UNDO = UndoRule()
SQUASH = SquashRule()


@dataclass(frozen=True)
class Finding:
    """A verdict git gives on ``judged``: ``by`` (a sha) reverted or landed it, found ``how``, at ``ts``."""

    source: str  # "revert" or "merged"
    outcome: str  # "partial" (a revert) or "fixed" (landed)
    judged: CommitDiff
    by: str
    how: str  # "message", "content", "sha", "patch-id"
    ts: float

    @property
    def key(self) -> str:
        """What makes it one verdict (the scan's cursor remembers it): ``source:judged sha``."""
        return f"{self.source}:{self.judged.sha}"


def reverted_shas(message: str) -> list[str]:
    """The (possibly abbreviated) shas a message's ``This reverts commit <sha>`` lines name, in order."""
    return [m.lower() for m in _REVERTS.findall(message)]


def informative(lines: Iterable[str], min_chars: int) -> Counter[str]:
    """The multiset of lines holding at least ``min_chars`` letters or digits."""
    return Counter(line for line in lines if len(_ALNUM.findall(line)) >= min_chars)


def undo_score(fix: CommitDiff, later: CommitDiff, rule: UndoRule = UNDO) -> tuple[float, float, int]:
    """(coverage of the fix, purity of the later commit, informative lines undone) — module docstring."""
    fix_plus, fix_minus = informative(fix.added, rule.min_chars), informative(fix.removed, rule.min_chars)
    plus, minus = informative(later.added, rule.min_chars), informative(later.removed, rule.min_chars)
    undone = (minus & fix_plus).total() + (plus & fix_minus).total()
    fix_size, later_size = fix_plus.total() + fix_minus.total(), plus.total() + minus.total()
    if not fix_size or not later_size:
        return 0.0, 0.0, 0
    return undone / fix_size, undone / later_size, undone


def undoes(fix: CommitDiff, later: CommitDiff, rule: UndoRule = UNDO) -> bool:
    """Whether ``later`` reverts ``fix`` by content (shares a file and passes ``rule``)."""
    if not set(fix.files) & set(later.files):
        return False
    coverage, purity, undone = undo_score(fix, later, rule)
    return coverage >= rule.min_coverage and purity >= rule.min_purity and undone >= rule.min_lines


def reverted_by_content(
    later: CommitDiff, earlier: Sequence[CommitDiff], rule: UndoRule = UNDO
) -> CommitDiff | None:
    """The earlier commit ``later`` undoes best (ties: the latest), or None."""
    best: tuple[float, float] | None = None
    found: CommitDiff | None = None
    for fix in earlier:
        if fix.sha == later.sha or fix.ts > later.ts or not undoes(fix, later, rule):
            continue
        rank = (undo_score(fix, later, rule)[0], fix.ts)
        if best is None or rank > best:
            best, found = rank, fix
    return found


def find_reverts(
    commits: Sequence[CommitDiff], rule: UndoRule = UNDO, *, named: Sequence[CommitDiff] = ()
) -> list[Finding]:
    """Reverts among ``commits`` (one branch's history, newest first as ``git log`` gives it): by message
    first, else by content.

    A commit undoes by content only commits before it in history: by time, and within one second by the
    order git gave (a revert made in the same second as its fix would otherwise "undo" its own revert the
    other way round). ``named``: older commits that messages name, known only so that their reverts
    resolve."""
    by_sha = {c.sha: c for c in (*named, *commits)}
    oldest_first = sorted(range(len(commits)), key=lambda i: (commits[i].ts, -i))
    by_file: dict[str, list[CommitDiff]] = {}
    found: dict[str, Finding] = {}
    for later in (commits[i] for i in oldest_first):
        targets = [(c, "message") for c in map(lambda s: _resolve(s, by_sha), reverted_shas(later.message))
                   if c is not None and c.sha != later.sha]  # fmt: skip
        if not targets and not later.is_merge:
            earlier = {c.sha: c for path in later.files for c in by_file.get(path, ())}
            fix = reverted_by_content(later, list(earlier.values()), rule)
            targets = [(fix, "content")] if fix is not None else []
        for fix, how in targets:
            finding = Finding("revert", "partial", fix, later.sha, how, later.ts)
            found.setdefault(finding.key, finding)
        if not later.is_merge:
            for path in later.files:
                by_file.setdefault(path, []).append(later)
    return list(found.values())


def _resolve(prefix: str, by_sha: Mapping[str, CommitDiff]) -> CommitDiff | None:
    if prefix in by_sha:
        return by_sha[prefix]
    matches = [c for sha, c in by_sha.items() if sha.startswith(prefix)]
    return matches[0] if len(matches) == 1 else None


def containment(branch: CommitDiff, landed: CommitDiff, rule: SquashRule = SQUASH) -> tuple[float, int]:
    """(share of the branch commit's informative lines the landed commit holds, how many it holds)."""
    plus, minus = informative(branch.added, rule.min_chars), informative(branch.removed, rule.min_chars)
    held = (plus & informative(landed.added, rule.min_chars)).total()
    held += (minus & informative(landed.removed, rule.min_chars)).total()
    size = plus.total() + minus.total()
    return (held / size if size else 0.0), held


def squash_target(
    branch: CommitDiff, landed: Sequence[CommitDiff], rule: SquashRule = SQUASH
) -> CommitDiff | None:
    """The default-branch commit that squash-merged ``branch``, or None (none, or two too close: abstain)."""
    scored = []
    for commit in landed:
        if commit.ts < branch.authored or not set(branch.files) & set(commit.files):
            continue
        share, held = containment(branch, commit, rule)
        if held >= rule.min_lines:
            scored.append((share, commit))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    if not scored or scored[0][0] < rule.min_containment:
        return None
    if len(scored) > 1 and scored[1][0] >= scored[0][0] - rule.margin:
        return None
    return scored[0][1]


def link_branch(
    branch: Sequence[CommitDiff],
    landed: Sequence[CommitDiff],
    patch_ids: Mapping[str, str] | None = None,
    rule: SquashRule = SQUASH,
) -> dict[str, tuple[CommitDiff, str]]:
    """Branch commit sha -> (the default-branch commit it landed as, how: ``patch-id``, ``content``, or
    ``branch`` when it was not found itself but every descendant on its branch that was found landed in
    that one commit: a squash keeps the last state, not each step). ``patch_ids``: sha -> patch-id."""
    ids = patch_ids or {}
    candidates = [c for c in landed if not c.is_merge]
    by_patch_id = {ids[c.sha]: c for c in candidates if c.sha in ids}
    links: dict[str, tuple[CommitDiff, str]] = {}
    for commit in branch:
        twin = by_patch_id.get(ids.get(commit.sha, ""))
        target = twin or squash_target(commit, candidates, rule)
        if target is not None:
            links[commit.sha] = (target, "patch-id" if twin is not None else "content")
    children: dict[str, list[str]] = {}
    for commit in branch:
        for parent in commit.parents:
            children.setdefault(parent, []).append(commit.sha)
    for commit in branch:
        if commit.sha in links:
            continue
        seen, stack, targets = set(), list(children.get(commit.sha, ())), set()
        while stack:
            sha = stack.pop()
            if sha not in seen:
                seen.add(sha)
                targets |= {links[sha][0].sha} if sha in links and links[sha][1] != "branch" else set()
                stack.extend(children.get(sha, ()))
        if len(targets) == 1:
            links[commit.sha] = (next(c for c in candidates if c.sha in targets), "branch")
    return links


def find_landed(
    landed: Sequence[CommitDiff],
    branch: Sequence[CommitDiff],
    patch_ids: Mapping[str, str],
    rule: SquashRule = SQUASH,
    *,
    reverting: Collection[str] = (),
) -> list[Finding]:
    """Merged verdicts: every non-merge ``landed`` commit (by sha) but the ``reverting`` ones (a revert
    landing says nothing of a fix, and its diff would link it to the fix it undoes), and each ``branch``
    commit not on the default branch that ``link_branch`` links (patch-id, content, branch).
    ``patch_ids``: both sides'."""
    out = [
        Finding("merged", "fixed", c, c.sha, "sha", c.ts)
        for c in landed
        if not c.is_merge and c.sha not in reverting
    ]
    landed_shas = {c.sha for c in landed}
    pending = [c for c in branch if not c.is_merge and c.sha not in landed_shas]
    links = link_branch(pending, landed, patch_ids, rule)
    for commit in pending:
        if commit.sha in links:
            target, how = links[commit.sha]
            out.append(Finding("merged", "fixed", commit, target.sha, how, target.ts))
    return out
