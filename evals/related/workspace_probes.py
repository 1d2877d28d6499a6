"""Off-topic probes in workspace mode: another repository's task text, localized in this checkout.

Every other task commit of ``evals.related`` hosts an off-topic probe (``run.queries_for``): a task of
another repository, asked of this one's history, where nothing is related and the right answer is none.
Text only abstains on nearly all of them; in workspace mode the probe is also localized in the task's
checkout, where a common identifier of the foreign text (``parse``, ``Config``) may resolve to a file a
past fix touched, and bring that fix back. This measures it: per probe, the restricted index of the
probe's text over the parent commit's tree (``checkout.restrict``), derived by hand from the full history
as the workspace data is, and committed beside it (``data/workspace/<repo>.probes.json.gz``)::

    python -m evals.related.workspace_probes build --git-dir /work/.mirror/python+mypy/repo   # by hand
    python -m evals.related.workspace_probes           # both halves: quiet probes, text only and workspace
    python -m evals.related.workspace_probes --write   # also results/workspace_probes.json and the docs

With the shipped recall and localizer weights (the ones ``evals.related.workspace`` chose on the tuning
half); nothing here is tuned.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from evals.related.checkout import GitTrees, build_arguments, built, chosen_repo, read, restrict, tasks, write
from evals.related.core import DATA_DIR, WARMUP, Repo, Tally, load_repos, write_section
from evals.related.run import queries_for
from evals.related.tune import SHA, history, views
from store import DEFAULT_WEIGHTS, RankingWeights
from store.localize import CheckoutIndex, localize
from store.localize.resolve import DEFAULT_WEIGHTS as LOCALIZE_DEFAULTS
from store.localize.resolve import LocalizeWeights
from store.recall.search import recall_view

K = 5
HERE = Path(__file__).parent
RESULT = HERE / "results" / "workspace_probes.json"
DOCS = HERE.parent.parent / "docs" / "evaluation.md"
BEGIN, END = "<!-- workspace-probes:begin -->", "<!-- workspace-probes:end -->"


def probes_path(data_dir: Path, repo_name: str) -> Path:
    """Where the derived probe data of ``repo_name`` lives."""
    return data_dir / "workspace" / (repo_name.replace("/", "__") + ".probes.json.gz")


def derive_probes(
    repo: Repo, others: Sequence[Repo], git_dir: Path, log: IO[str] = sys.stderr
) -> dict[str, Any]:
    """Per task commit that hosts an off-topic probe: the probe's source and its restricted index over
    the first parent's tree."""
    trees = GitTrees(git_dir)
    positions = {c.sha: i for i, c in enumerate(repo.commits)}
    out: dict[str, Any] = {}
    try:
        for n, (position, sha, _) in enumerate(tasks(repo, WARMUP)):
            commit = repo.commits[positions[sha]]
            probe = [q for q in queries_for(repo, commit, others, position) if q.cls == "off_topic"]
            if not probe:
                continue
            full = trees.index(trees.first_parent(sha))
            out[sha] = {"source": probe[0].source, "index": restrict(full, probe[0].text).to_json()}
            if n % 25 == 0:
                log.write(f"{repo.name}: {n} tasks\n")
    finally:
        trees.close()
    return {"repo": repo.name, "head": repo.head, "probes": out}


def measure(
    repos: Sequence[Repo],
    split: str,
    ranking: RankingWeights = DEFAULT_WEIGHTS,
    loc: LocalizeWeights = LOCALIZE_DEFAULTS,
    data_dir: Path = DATA_DIR,
) -> dict[str, Any]:
    """Text only and workspace mode over the probes of ``split`` of every repository with probe data:
    how many probes got nothing back (quiet), and how many fixes came back in all."""
    text, workspace = Tally(), Tally()
    localized = 0
    for repo in repos:
        path = probes_path(data_dir, repo.name)
        if not path.exists():
            continue
        derived = read(path)["probes"]
        entries, asked = history(repo, [r for r in repos if r.name != repo.name], split)
        for query, view in views(entries, [q for q in asked if q.cls == "off_topic"]):
            if query.sha not in derived:
                continue
            found = localize(query.text, CheckoutIndex.from_json(derived[query.sha]["index"]), weights=loc)
            localized += bool(found)
            for tally, where in ((text, None), (workspace, found)):
                got = recall_view(
                    view, query.text, files=None, k=K, now=query.ts, weights=ranking,
                    file_exists_check=False, localized=where,
                )  # fmt: skip
                tally.add([(r.entry.event_id or "?")[:SHA] for r in got], frozenset(), frozenset())
    return {
        "probes": text.queries,
        "localized_somewhere": localized,
        "text_only": text.as_dict(),
        "workspace": workspace.as_dict(),
    }


def render(result: dict[str, Any]) -> str:
    """docs/evaluation.md's lines on the probes."""
    lines = [
        "Generated by `python -m evals.related.workspace_probes --write` from"
        f" `evals/related/results/{RESULT.name}`:"
    ]
    for split, name in (("held_out", "held-out"), ("tune", "tune")):
        half = result[split]
        text, ws = half["text_only"], half["workspace"]
        lines.append(
            f"- {name}: {half['probes']} off-topic probes, {half['localized_somewhere']} localized to some"
            f" file of the checkout; quiet: text only {text['quiet']}/{text['unrelated']}, workspace mode"
            f" {ws['quiet']}/{ws['unrelated']} ({ws['returned']} fixes returned in all)."
        )
    return "\n".join(lines)


def write_docs(result: dict[str, Any], docs: Path = DOCS) -> None:
    write_section(docs, BEGIN, END, render(result))


def evaluate(repos: Sequence[Repo], data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """Both halves' probes with the shipped weights."""
    return {split: measure(repos, split, data_dir=data_dir) for split in ("tune", "held_out")}


def build(git_dir: Path, name: str | None, data_dir: Path = DATA_DIR) -> Path:
    """Derive and write one repository's probe data (by hand: needs the full history)."""
    every = load_repos(data_dir)
    repo = chosen_repo(git_dir, name, every)
    path = probes_path(data_dir, repo.name)
    write(derive_probes(repo, [r for r in every if r.name != repo.name], git_dir), path)
    return path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.related.workspace_probes", description=__doc__.splitlines()[0]
    )
    build_arguments(parser, "probes")
    parser.add_argument(
        "--write", action="store_true", help=f"write {RESULT.name} and docs/evaluation.md's lines"
    )
    args = parser.parse_args(argv)
    if built(parser, args, build):
        return 0
    result = evaluate(load_repos())
    sys.stdout.write(render(result) + "\n")
    if args.write:
        RESULT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        write_docs(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
