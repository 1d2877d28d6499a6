"""The docs a newcomer reads: a README short enough to read, links that lead somewhere, and a decisions
index that lists every decision. Checked on the files themselves (no rendering): a relative link outside
code in README.md or any docs/**/*.md must name a file or directory that exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fixmem.api.auth import MIN_TOKEN_CHARS, parse_tokens

ROOT = Path(__file__).resolve().parents[1]
DECISIONS = ROOT / "docs" / "decisions"
README_MAX_LINES = 400

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")  # one line: a stray backtick cannot eat a paragraph
_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(\S+)(?:[ \t]+\"[^\"]*\")?[ \t]*$", re.M)  # [label]: target
_EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)  # http:, https:, mailto: ...


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def relative_links(text: str) -> list[str]:
    """The link targets of a markdown text that are paths (not URLs, not anchors), outside code."""
    prose = _CODE.sub("", _FENCE.sub("", text))
    targets = _LINK.findall(prose) + _REFERENCE.findall(prose)
    return [t for t in targets if not _EXTERNAL.match(t) and not t.startswith("#")]


def broken_links(page: Path) -> list[str]:
    """``page``'s relative links whose file (the part before any ``#``) does not exist."""
    broken = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0].split("?", 1)[0]
        if not (page.parent / path).exists():
            broken.append(target)
    return broken


def test_the_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail into docs/ (at most 400)"


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == [], f"{page.relative_to(ROOT)} links to missing files"


def test_the_link_check_sees_links_and_skips_code(tmp_path: Path) -> None:
    """The checker itself: a missing target is reported (inline, image, reference, with an anchor), an
    existing one, a URL, an anchor and anything inside code are not."""
    (tmp_path / "there.md").write_text("x")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](there.md) [ok too](there.md#part) [web](https://example.com/x.md) [anchor](#top)\n"
        "[gone](missing.md) ![img](gone.png) [deep](sub/gone.md#a)\n"
        "[ref]: also-missing.md\n"
        "`[code](not-a-link.md)`\n"
        "```\n[fenced](not-a-link-either.md)\n```\n"
    )
    assert broken_links(page) == ["missing.md", "gone.png", "sub/gone.md#a", "also-missing.md"]


def decision_files() -> list[Path]:
    return sorted(p for p in DECISIONS.glob("*.md") if p.name != "README.md")


def test_the_decisions_index_lists_every_decision() -> None:
    index = (DECISIONS / "README.md").read_text(encoding="utf-8")
    listed = set(relative_links(index))
    files = decision_files()
    assert files, "docs/decisions/ holds no decision"
    unlisted = [p.name for p in files if p.name not in listed]
    assert unlisted == [], f"add these to docs/decisions/README.md (numbered): {unlisted}"
    numbers = [p.name[:4] for p in files]
    assert all(n.isdigit() for n in numbers), f"decision files are NNNN-title.md: {numbers}"
    assert numbers == [f"{i:04d}" for i in range(1, len(files) + 1)], "decision numbers have a gap or a twin"


@pytest.mark.parametrize("path", decision_files(), ids=lambda p: p.name)
def test_each_decision_has_a_status_and_the_four_sections(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# {path.name[:4]}. "), "the title starts with the decision's number"
    assert re.search(r"^Status: \S", text, re.M), "a 'Status:' line"
    headings = re.findall(r"^## (.+)$", _FENCE.sub("", text), re.M)
    assert headings == ["Context", "Decision", "Measured", "Consequences"], headings


_TOKEN_EXAMPLE = re.compile(r"FIXMEM_API_TOKENS[=:]\s*[\"']([^\"'$]+)[\"']")


def test_example_tokens_in_the_docs_are_long_enough_to_pass_without_a_warning() -> None:
    """A reader who pastes an example gets no short-token warning (the docs' own example once did)."""
    files = [*pages(), *sorted((ROOT / "deploy").rglob("*.yml"))]
    examples = [(f, m) for f in files for m in _TOKEN_EXAMPLE.findall(f.read_text()) if ":" in m]
    assert examples, "the pattern finds the docs' token examples"
    for path, example in examples:
        if "…" in example or "..." in example:
            continue  # a shape (`token:owner,…`), not a value to paste
        for token in parse_tokens(example, source=str(path)):
            assert len(token) >= MIN_TOKEN_CHARS, f"{path.relative_to(ROOT)}: example token {token!r}"
