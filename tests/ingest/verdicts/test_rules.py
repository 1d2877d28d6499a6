"""The pure core of git verdicts: log parsing, reverts by message and content, landed commits, the wire."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ingest.verdicts.diffs import LOG_FORMAT, MAX_LINES, CommitDiff, parse_log
from ingest.verdicts.rules import (
    SquashRule,
    UndoRule,
    find_landed,
    find_reverts,
    link_branch,
    reverted_shas,
    squash_target,
    undoes,
)
from ingest.verdicts.wire import MAX_HUNK_LINES, verdict_events

FIX = CommitDiff(
    sha="a" * 40, ts=100, authored=100, files=("src/pay.py",),
    added=("timeout = settings.login_timeout", "retry_login(session, attempts=3)"),
    removed=("timeout = 5",),
)  # fmt: skip
REVERT = CommitDiff(
    sha="b" * 40, ts=200, authored=200, files=("src/pay.py",),
    added=("timeout = 5",),
    removed=("timeout = settings.login_timeout", "retry_login(session, attempts=3)"),
)  # fmt: skip
UNRELATED = CommitDiff(
    sha="c" * 40, ts=150, authored=150, files=("src/pay.py",),
    added=("def refund(charge):", "return charge.refund()"), removed=(),
)  # fmt: skip


def _record(sha: str, parents: str, message: str, patch: str) -> str:
    return f"\x1e{sha}\x1f{parents}\x1f1700000000\x1f1690000000\x1f{message}\x1f{patch}"


def test_parse_log_reads_files_and_normalized_lines_and_tells_headers_from_lines() -> None:
    patch = (
        "\ndiff --git a/src/x.py b/src/x.py\nindex 1..2 100644\n--- a/src/x.py\n+++ b/src/x.py\n"
        "@@ -3 +3,2 @@\n-    old = 1\n+    new = 2\n+\n+++ counter\n--- dashes\n"
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n"
        "@@ -1 +0,0 @@\n-bye\n"
    )
    [commit] = parse_log(_record("d" * 40, "e" * 40, "subject\n\nbody", patch))
    assert commit.sha == "d" * 40 and commit.parents == ("e" * 40,)
    assert commit.ts == 1700000000 and commit.authored == 1690000000 and commit.message == "subject\n\nbody"
    assert commit.files == ("src/x.py", "gone.txt")
    assert commit.added == ("new = 2", "++ counter")  # a blank line dropped; `+++ counter` is a change
    assert commit.removed == ("old = 1", "-- dashes", "bye")


def test_parse_log_keeps_at_most_max_lines_a_side_and_says_so() -> None:
    patch = "diff --git a/f b/f\n@@ -0,0 +1 @@\n" + "".join(f"+line {i}\n" for i in range(MAX_LINES + 5))
    [commit] = parse_log(_record("d" * 40, "", "m", patch))
    assert len(commit.added) == MAX_LINES and commit.truncated


def test_log_format_is_what_parse_log_reads() -> None:
    assert LOG_FORMAT.count("%x1f") == 5 and LOG_FORMAT.startswith("%x1e%H")


@pytest.mark.parametrize(
    ("message", "shas"),
    [
        (f'Revert "fix login"\n\nThis reverts commit {"0a" * 20}.', ["0a" * 20]),
        ("This reverts commit ABCDEF1.\nThis reverts commit 1234567.", ["abcdef1", "1234567"]),
        ("reverts the login fix", []),
        ("This reverts commit 12ab.", []),  # too short to name a commit
    ],
)  # fmt: skip
def test_reverted_shas(message: str, shas: list[str]) -> None:
    assert reverted_shas(message) == shas


def test_a_later_commit_that_undoes_the_fix_reverts_it_without_a_message() -> None:
    assert undoes(FIX, REVERT)
    assert not undoes(FIX, UNRELATED)
    assert not undoes(FIX, CommitDiff(**{**REVERT.__dict__, "files": ("other.py",)}))  # no shared file
    [finding] = find_reverts([FIX, UNRELATED, REVERT])
    assert (finding.source, finding.outcome, finding.judged.sha, finding.by, finding.how) == (
        "revert", "partial", FIX.sha, REVERT.sha, "content"
    )  # fmt: skip
    assert finding.ts == REVERT.ts and finding.key == f"revert:{FIX.sha}"


def test_a_partial_undo_under_the_coverage_is_no_revert() -> None:
    half = CommitDiff(sha="f" * 40, ts=300, files=FIX.files, removed=("retry_login(session, attempts=3)",))
    assert not undoes(FIX, half, UndoRule(min_coverage=0.6, min_purity=0.0))
    assert undoes(FIX, half, UndoRule(min_coverage=0.3, min_purity=0.0))


def test_the_message_names_the_reverted_commit_even_when_the_content_differs() -> None:
    later = CommitDiff(
        sha="e" * 40, ts=300, message=f"This reverts commit {UNRELATED.sha[:10]}.", files=("a",)
    )
    [finding] = find_reverts([FIX, UNRELATED, later])
    assert (finding.judged.sha, finding.how) == (UNRELATED.sha, "message")
    older = CommitDiff(sha="9" * 40, ts=1, files=("a",))
    [finding] = find_reverts(
        [CommitDiff(sha="e" * 40, ts=300, message=f"This reverts commit {'9' * 40}")], named=[older]
    )
    assert finding.judged is older


@given(
    st.lists(st.text(alphabet="abcdefgh (),=", min_size=5, max_size=20), min_size=1, max_size=8, unique=True)
)
def test_the_inverse_diff_of_any_fix_undoes_it(lines: list[str]) -> None:
    fix = CommitDiff(sha="1" * 40, ts=1, files=("f",), added=tuple(lines))
    inverse = CommitDiff(sha="2" * 40, ts=2, files=("f",), removed=tuple(lines))
    assert undoes(fix, inverse, UndoRule(min_chars=1)) or all(len(set(x) - set(" (),=")) == 0 for x in lines)


def test_squash_target_abstains_on_a_tie_and_under_the_share() -> None:
    branch = CommitDiff(sha="1" * 40, ts=10, authored=10, files=("f",), added=("alpha = compute(beta)",))
    landed = CommitDiff(sha="2" * 40, ts=20, files=("f",), added=("alpha = compute(beta)", "other = 1"))
    twin = CommitDiff(sha="3" * 40, ts=30, files=("f",), added=("alpha = compute(beta)",))
    before = CommitDiff(sha="4" * 40, ts=5, files=("f",), added=("alpha = compute(beta)",))
    assert (
        squash_target(branch, [landed, before]) is landed
    )  # a commit before the branch commit is no landing
    assert squash_target(branch, [landed, twin]) is None
    assert squash_target(branch, [CommitDiff(sha="5" * 40, ts=20, files=("f",), added=("x = 1",))]) is None


def test_landed_by_sha_patch_id_content_and_branch() -> None:
    main1 = CommitDiff(sha="1" * 40, ts=10, files=("f",), added=("first_line = 1",))
    squash = CommitDiff(sha="2" * 40, ts=50, files=("f", "g"), added=("value = final()", "helper = 2"))
    step1 = CommitDiff(
        sha="3" * 40, parents=("1" * 40,), ts=20, authored=20, files=("f",), added=("value = draft()",)
    )
    step2 = CommitDiff(
        sha="4" * 40,
        parents=("3" * 40,),
        ts=30,
        authored=30,
        files=("f", "g"),
        added=("value = final()", "helper = 2"),
    )
    picked = CommitDiff(
        sha="5" * 40, parents=("1" * 40,), ts=40, authored=40, files=("h",), added=("cherry = 1",)
    )
    main2 = CommitDiff(sha="6" * 40, ts=60, files=("h",), added=("cherry = 1",))
    ids = {picked.sha: "p1", main2.sha: "p1"}
    found = {
        f.judged.sha: (f.by, f.how) for f in find_landed([main1, squash, main2], [step1, step2, picked], ids)
    }
    assert found == {
        main1.sha: (main1.sha, "sha"), squash.sha: (squash.sha, "sha"), main2.sha: (main2.sha, "sha"),
        step2.sha: (squash.sha, "content"), step1.sha: (squash.sha, "branch"),
        picked.sha: (main2.sha, "patch-id"),
    }  # fmt: skip
    assert link_branch([step1], [squash], None, SquashRule()) == {}  # alone, the draft step is not found


def test_verdict_events_are_the_link_form() -> None:
    [finding] = find_reverts([FIX, REVERT])
    [event] = verdict_events([finding], owner="alice", project_key="github.com/acme/pay", branch="main")
    assert event == {
        "v": 1, "kind": "verdict", "ts": 200, "owner": "alice", "project_key": "github.com/acme/pay",
        "outcome": "partial", "source": "revert",
        "detail": f"git: reverted by {REVERT.sha[:12]} (its diff undoes this one)",
        "link": {
            "commit": FIX.sha, "branch": "", "session_id": "", "since": None, "until": None,
            "files": ["src/pay.py"], "tests": [],
            "hunks": [
                "-timeout = 5", "+timeout = settings.login_timeout", "+retry_login(session, attempts=3)"
            ],
        },
    }  # fmt: skip
    big = CommitDiff(sha="7" * 40, files=("f",), added=tuple(f"x{i}" for i in range(300)))
    assert len(big.hunks(MAX_HUNK_LINES)) == MAX_HUNK_LINES


def test_in_one_second_a_fix_never_undoes_its_own_revert() -> None:
    """git log order (newest first) decides within a second: the revert undoes the fix, not the other way
    (failed before: the fix, sorted after its same-second revert, was found to "revert" it by content)."""
    fix = CommitDiff(**{**FIX.__dict__, "ts": 500})
    revert = CommitDiff(**{**REVERT.__dict__, "ts": 500})
    [finding] = find_reverts([revert, fix])  # newest first, as git log gives them
    assert (finding.judged.sha, finding.by, finding.how) == (fix.sha, revert.sha, "content")
