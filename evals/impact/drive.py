"""Simulated fleets driven end to end through the real hook and adapter code paths, into a real store.

Each fleet is a fresh data directory with seeded fixes (real turns, real extraction), ``FIXMEM_HOLDBACK``
set, and simulated agent sessions over two projects where the truth is known: in ``lift`` memory raises
the success rate by ``LIFT``, in ``flat`` it does nothing. Half the sessions are Claude Code sessions
(``fixmem.hooks.claude_code.run`` with the documented hook payloads, their turns published by the Stop
publisher's functions), half run the harness adapter (``fixmem.hooks.harness.Harness``). A session: two
prompts (two turns: the arm must hold), a ``Read`` of the relevant fix's file (never a follow), then
maybe the relevant fix's error and maybe an edit of its file. What is checked against the truth:

- every session's arm is ``arm_for`` of (owner, project, session, salt), the same in both its turns;
- holdback sessions got no fix context on any call; memory sessions did;
- a fix is recorded followed exactly when the agent met its error or edited its file after it was shown;
- ``store.impact`` over the store's entries reports both arms.

``python -m evals.impact.drive [--fleets N] [--sessions N]`` writes ``evals/impact/results/drive.json``.
Reaches ``fixmem.hooks`` (the one evaluation allowed to: import-linter's ignore, pyproject.toml).
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from fixmem.hooks import claude_code
from fixmem.hooks.arms import HOLDBACK, MEMORY, arm_for
from fixmem.hooks.config import HookConfig
from fixmem.hooks.harness import Harness
from fixmem.hooks.publisher import publish_events, with_recall
from fixmem.hooks.reader import LocalReader
from fixmem.hooks.session import SessionStore
from ingest.schema import TurnEvent, validate_event
from store import FixStore
from store.impact import report, sessions_of

RESULTS = Path(__file__).resolve().parent / "results" / "drive.json"
OWNER = "fleet"
PROJECTS = {"github.com/sim/lift": 0.30, "github.com/sim/flat": 0.0}  # the true lift of each project
BASE = 0.40
SHARE = 0.3
SALT = "drive"
SEEDS = 6  # seeded fixes per project
P_ERROR, P_EDIT_SHOWN, P_EDIT_UNAIDED = 0.5, 0.8, 0.3


def _turn(
    project: str, workspace: str, message: str, events: list[dict[str, Any]], *, ts: float, session: str
) -> TurnEvent:
    meta = {"harness": "sim", "session_id": session}
    body = {"v": 1, "ts": ts, "owner": OWNER, "project_key": project, "workspace": workspace}
    return validate_event({**body, "user_message": message, "tool_events": events, "harness_meta": meta})


def _pytest(ok: bool) -> dict[str, Any]:
    out = "1 passed in 0.01s" if ok else "1 failed in 0.01s"
    return {"tool": "bash", "input": {"command": "pytest -q"}, "output": out, "exit_code": 0 if ok else 1}


def error_of(k: int) -> str:
    return f"E   ValueError: malformed ledger row in settle_batch_{k}"


def seed(config: HookConfig, project: str, workspace: str, now: float) -> None:
    """``SEEDS`` real fixed turns: fix k edits ``src/ledger_k.py`` after the error ``error_of(k)``."""
    events = []
    for k in range(SEEDS):
        tools: list[dict[str, Any]] = [
            {
                "tool": "bash",
                "input": {"command": "pytest -q"},
                "output": f"{error_of(k)}\n1 failed",
                "exit_code": 1,
            },
            {"tool": "edit", "input": {"path": f"src/ledger_{k}.py"}, "output": "edited"},
            _pytest(True),
        ]
        message = f"settle_batch_{k} crashes on a malformed ledger row in ledger_{k}"
        events.append(
            _turn(project, workspace, message, tools, ts=now - 86400 * (k + 1), session=f"seed-{k}")
        )
    publish_events(config, events)


class Agent:
    """One simulated session's behaviour and its truth."""

    def __init__(self, rng: random.Random, project: str, k: int) -> None:
        self.k, self.project = k, project
        self.errs = rng.random() < P_ERROR
        self.edit_if_shown, self.edit_unaided = rng.random() < P_EDIT_SHOWN, rng.random() < P_EDIT_UNAIDED
        self.roll = rng.random()

    def prompt(self) -> str:
        return f"settle_batch_{self.k} crashes on a malformed ledger row in ledger_{self.k}"


def claude_session(
    env: dict[str, str], reader: LocalReader, agent: Agent, *, sid: str, workspace: str
) -> dict[str, Any]:
    """A Claude Code session through ``claude_code.run``: what the hooks answered, and the turn published."""
    outputs: list[str] = []

    def call(event: str, **fields: Any) -> None:
        body = {
            "session_id": sid,
            "transcript_path": "",
            "cwd": workspace,
            "hook_event_name": event,
            **fields,
        }
        outputs.append(claude_code.run(json.dumps(body).encode(), env, reader=reader))

    file = f"{workspace}/src/ledger_{agent.k}.py"
    call("UserPromptSubmit", prompt=agent.prompt())
    call("PostToolUse", tool_name="Read", tool_input={"file_path": file})
    if agent.errs:
        call(
            "PostToolUseFailure", tool_name="Bash", tool_input={"command": "pytest"}, error=error_of(agent.k)
        )
    shown = bool(outputs[0])
    edits = agent.edit_if_shown if shown else agent.edit_unaided
    if edits:
        call("PostToolUse", tool_name="Edit", tool_input={"file_path": file})
    call("UserPromptSubmit", prompt="and run the whole suite")
    return {"outputs": outputs, "edited": edits}


def harness_session(
    config: HookConfig, reader: LocalReader, agent: Agent, sid: str, workspace: str
) -> dict[str, Any]:
    """A harness-adapter session: ``before_task``, ``on_file``, ``on_error``."""
    fm = Harness(config, workspace=workspace, session=sid, reader=reader)
    outputs = [fm.before_task(agent.prompt()), fm.on_file(f"src/ledger_{agent.k}.py")]
    if agent.errs:
        outputs.append(fm.on_error(error_of(agent.k)))
    edits = agent.edit_if_shown if outputs[0] else agent.edit_unaided
    if edits:
        outputs.append(fm.on_file(f"src/ledger_{agent.k}.py", edited=True))
    outputs.append(fm.before_task("and run the whole suite"))
    return {"outputs": outputs, "edited": edits}


def run_fleet(root: Path, rng: random.Random, sessions: int, fleet: int) -> dict[str, Any]:
    """One fleet in ``root``: seed, drive ``sessions`` sessions, read the store, check the records."""
    now = time.time()
    base_env = {"FIXMEM_DATA_DIR": str(root / "data"), "FIXMEM_OWNER": OWNER, "HOME": str(root)}
    base_env |= {
        "FIXMEM_HOLDBACK": str(SHARE),
        "FIXMEM_HOLDBACK_SALT": SALT,
        "FIXMEM_HOOK_DAEMON_IDLE_SECONDS": "0",
    }
    envs = {p: {**base_env, "FIXMEM_PROJECT": p} for p in PROJECTS}
    configs = {p: HookConfig.from_env(e) for p, e in envs.items()}
    workspace = str(root / "ws")
    for p in PROJECTS:
        seed(configs[p], p, workspace, now - 86400 * 30)
    readers = {p: LocalReader(configs[p]) for p in PROJECTS}
    truth: dict[str, dict[str, Any]] = {}
    for n in range(sessions):
        project = rng.choice(list(PROJECTS))
        config, agent = configs[project], Agent(rng, project, rng.randrange(SEEDS))
        sid = f"f{fleet}-s{n}"
        surface = "claude-code" if n % 2 == 0 else "harness"
        ts = now - (sessions - n) * 60
        if surface == "claude-code":
            done = claude_session(envs[project], readers[project], agent, sid=sid, workspace=workspace)
        else:
            done = harness_session(config, readers[project], agent, sid, workspace)
        arm = arm_for(OWNER, project, sid, share=SHARE, salt=SALT)
        fixed = agent.roll < BASE + (PROJECTS[project] if arm == MEMORY else 0.0)
        for i, ok in enumerate((False, fixed)):
            tools = [
                {"tool": "edit", "input": {"path": f"work/s{n}_{i}.py"}, "output": "edited"},
                _pytest(ok),
            ]
            message = "run the whole suite" if i else f"session {n}: {agent.prompt()}"
            event = _turn(project, workspace, message, tools, ts=ts + i, session=sid)
            if surface == "claude-code":  # the Stop publisher: the session's record joins the turn
                state = SessionStore(claude_code.sessions_dir(config)).read(sid)
                publish_events(config, [with_recall(event, state)])
            else:
                Harness(config, workspace=workspace, session=sid, reader=readers[project]).after_turn(event)
        truth[sid] = {"arm": arm, "project": project, "k": agent.k, "fixed": fixed, "surface": surface}
        truth[sid] |= {"errs": agent.errs, "edited": done["edited"], "context": any(done["outputs"])}
    return check(FixStore(root / "data", cap=configs[next(iter(PROJECTS))].rotation_cap), truth)


def check(store: FixStore, truth: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The store's records against the truth, and the impact report per project and overall."""
    entries = [e for p in PROJECTS for e in store.read(OWNER, p).entries]
    by_session: dict[str, list[Any]] = {}
    for e in entries:
        extra = e.model_extra or {}
        if isinstance(extra.get("recall"), dict):
            by_session.setdefault(str(e.session_id), []).append(extra["recall"])
    wrong: dict[str, int] = {
        "arm": 0,
        "arm_changed": 0,
        "context_in_holdback": 0,
        "followed": 0,
        "missing": 0,
    }
    relevant_shown = {MEMORY: [0, 0], HOLDBACK: [0, 0]}
    for sid, t in truth.items():
        records = by_session.get(sid, [])
        if len(records) != 2:
            wrong["missing"] += 1
            continue
        wrong["arm"] += records[-1]["arm"] != t["arm"]
        wrong["arm_changed"] += records[0]["arm"] != records[-1]["arm"]
        wrong["context_in_holdback"] += t["arm"] == HOLDBACK and t["context"]
        last = records[-1]
        shown = [s["id"] for s in last["injected" if t["arm"] == MEMORY else "shadow"]]
        relevant = seed_id(store, t["project"], t["k"])
        relevant_shown[t["arm"]][0] += relevant in shown
        relevant_shown[t["arm"]][1] += 1
        expected = {relevant} if relevant in shown and (t["errs"] or t["edited"]) else set()
        wrong["followed"] += set(last["followed"]) != expected
    sessions = sessions_of(entries)
    overall = report(sessions).to_dict()
    per_project = {
        p: report([s for s in sessions if s.project == p]).to_dict()["lift"]["outcome"] for p in PROJECTS
    }
    return {
        "sessions": len(truth),
        "records_wrong": wrong,
        "relevant_fix_shown": {a: round(k / n, 3) if n else None for a, (k, n) in relevant_shown.items()},
        "arms": {a: overall["arms"][a]["sessions"] for a in (MEMORY, HOLDBACK)},
        "follow_rate": {a: overall["arms"][a]["follow_rate"] for a in (MEMORY, HOLDBACK)},
        "lift": overall["lift"]["outcome"],
        "lift_by_project": per_project,
    }


_SEED_IDS: dict[tuple[str, str, int], str] = {}


def seed_id(store: FixStore, project: str, k: int) -> str:
    """The entry id of seeded fix ``k`` of ``project`` (found by its task)."""
    key = (str(store.root), project, k)
    if key not in _SEED_IDS:
        task = f"settle_batch_{k} crashes"
        (found,) = [e.id for e in store.read(OWNER, project).entries if e.task.startswith(task)]
        _SEED_IDS[key] = found
    return _SEED_IDS[key]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.impact.drive")
    parser.add_argument("--fleets", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=120)
    parser.add_argument("--seed", type=int, default=31)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    fleets = []
    for fleet in range(args.fleets):
        with tempfile.TemporaryDirectory(prefix="fixmem-impact-") as tmp:
            fleets.append(run_fleet(Path(tmp), rng, args.sessions, fleet))
    ok = all(not any(f["records_wrong"].values()) for f in fleets)
    results = {"seed": args.seed, "true_lift": PROJECTS, "base": BASE, "holdback": SHARE,
               "records_match_truth": ok, "fleets": fleets}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
