#!/usr/bin/env python3
"""Regenerate the REAL runner outputs the derived eval entries are extracted from.

Usage, from the repository root: ``python evals/recall/runs/make_runs.py [CASE ...]``.

Each case is a tiny project shaped like one of the eval projects (same workspace-relative paths), with
a bug and its fix. The real runner (pytest, go test, cargo test) runs on the buggy version and then on
the fixed one (or on a fix that does not hold, for a ``partial`` case); ``<case>-1.txt`` and
``<case>-2.txt`` keep stdout+stderr exactly as printed, with the temporary directory replaced by the
eval project's workspace root, and ``manifest.json`` records each run's command, exit code and tool.
``evals/recall/derive_entries.py`` turns these runs into fix entries with the real extractor. A runner that
is not installed is skipped with a message (its case keeps its previous outputs).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY_ROOT = "/home/alice/payments-api"
GO_ROOT = "/home/bob/ingestd"
RS_ROOT = "/home/bob/tinydb"

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["src"]\n'
GO_MOD = "module github.com/bob/ingestd\n\ngo 1.19\n"
CARGO_TOML = '[package]\nname = "tinydb"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'


@dataclass(frozen=True)
class Case:
    """A project, the files of its first and second run, and the command both runs use."""

    root: str  # the eval project's workspace root (replaces the temp directory in the output)
    tool: list[str]  # the runner, asked for its version
    command: list[str]
    common: dict[str, str]
    first: dict[str, str]  # the buggy files
    second: dict[str, str]  # the files after the agent's edit
    env: dict[str, str] = field(default_factory=dict)


FX_BAD = (
    "from decimal import Decimal\n\n\ndef convert(amount: str, rate: str) -> Decimal:\n"
    '    """Convert a decimal amount string at ``rate``, to cents."""\n'
    '    return (Decimal(amount) * Decimal(rate)).quantize(Decimal("0.01"))\n'
)
FX_GOOD = FX_BAD.replace("Decimal(amount) *", 'Decimal(amount.replace(",", "")) *')
FX_TEST = (
    "from decimal import Decimal\n\nfrom payments.fx import convert\n\n\n"
    "def test_convert_plain_amount():\n"
    '    assert convert("100.00", "1.08") == Decimal("108.00")\n\n\n'
    "def test_convert_amount_with_thousands_separator():\n"
    '    assert convert("1,200.50", "1.08") == Decimal("1296.54")\n'
)

RETRY_BAD = (
    "import time\n\n\nclass RateLimited(Exception):\n    pass\n\n\n"
    "def with_retries(call, attempts=4, backoff=0.0):\n"
    '    """Call ``call()``; on a 429 wait ``backoff * 2**n`` seconds and try again."""\n'
    "    for n in range(1):\n"
    "        try:\n            return call()\n"
    "        except RateLimited:\n            time.sleep(backoff * 2**n)\n"
    '    raise RuntimeError(f"gave up after {n + 1} attempt(s): 429 Too Many Requests")\n'
)
RETRY_GOOD = RETRY_BAD.replace("range(1)", "range(attempts)")
RETRY_TEST = (
    "from payments.stripe_retry import RateLimited, with_retries\n\n\n"
    "def test_retries_rate_limited_requests():\n"
    "    answers = iter([RateLimited(), RateLimited(), 'charge'])\n\n"
    "    def call():\n        answer = next(answers)\n"
    "        if isinstance(answer, Exception):\n            raise answer\n        return answer\n\n"
    "    assert with_retries(call) == 'charge'\n"
)

REFUND_BAD = (
    "from decimal import Decimal\n\nfrom pydantic import BaseModel, ConfigDict, Field\n\n\n"
    "class RefundRequest(BaseModel):\n    model_config = ConfigDict(strict=True)\n\n"
    "    charge_id: str\n    amount: Decimal = Field(gt=0)\n"
)
REFUND_GOOD = REFUND_BAD.replace("    model_config = ConfigDict(strict=True)\n\n", "")
REFUND_TEST = (
    "from decimal import Decimal\n\nfrom payments.api.schemas import RefundRequest\n\n\n"
    "def test_refund_amount_may_be_a_json_string():\n"
    '    body = {"charge_id": "ch_1", "amount": "12.50"}\n'
    '    assert RefundRequest.model_validate(body).amount == Decimal("12.50")\n'
)

WEBHOOK_BAD = (
    "def idempotency_key(event: dict) -> str:\n"
    '    """The key that makes a replayed webhook event a no-op."""\n'
    '    return event["request"]["idempotency_key"]\n'
)
WEBHOOK_STILL_BAD = (  # the agent's fix reads the key from the wrong place: the test still fails
    "def idempotency_key(event: dict) -> str:\n"
    '    """The key that makes a replayed webhook event a no-op."""\n'
    '    request = event.get("request") or {}\n'
    '    return request["idempotency_key"]\n'
)
WEBHOOK_TEST = (
    "from payments.webhooks.replay import idempotency_key\n\n\n"
    "def test_dashboard_events_have_a_key():\n"
    '    event = {"id": "evt_1", "request": None}\n'
    '    assert idempotency_key(event) == "evt_1"\n'
)

RING_BAD = (
    "package ring\n\n// Ring keeps the last len(buf) values.\ntype Ring struct {\n"
    "\tbuf  []int\n\tnext int\n}\n\nfunc New(n int) *Ring { return &Ring{buf: make([]int, n)} }\n\n"
    "// Push stores v, overwriting the oldest value when full.\nfunc (r *Ring) Push(v int) {\n"
    "\tr.buf[r.next] = v\n\tr.next++\n}\n"
)
RING_GOOD = RING_BAD.replace("\tr.next++\n", "\tr.next = (r.next + 1) % len(r.buf)\n")
RING_TEST = (
    'package ring\n\nimport "testing"\n\nfunc TestRingWrapsAround(t *testing.T) {\n'
    "\tr := New(8)\n\tfor i := 0; i < 20; i++ {\n\t\tr.Push(i)\n\t}\n"
    '\tif r.buf[(r.next+7)%8] != 19 {\n\t\tt.Fatalf("newest value lost")\n\t}\n}\n'
)

WINDOW_BAD = (
    'package dedup\n\nimport "time"\n\n// Window remembers keys for ttl.\ntype Window struct {\n'
    "\tttl  time.Duration\n\tseen map[string]time.Time\n}\n\n"
    "func NewWindow(ttl time.Duration) *Window {\n"
    "\treturn &Window{ttl: ttl, seen: map[string]time.Time{}}\n}\n\n"
    "// Seen reports whether key was seen within ttl before now, and records it.\n"
    "func (w *Window) Seen(key string, now time.Time) bool {\n"
    "\t_, ok := w.seen[key]\n\tw.seen[key] = now\n\treturn ok\n}\n"
)
WINDOW_GOOD = WINDOW_BAD.replace(
    "\t_, ok := w.seen[key]\n\tw.seen[key] = now\n\treturn ok\n",
    "\tat, ok := w.seen[key]\n\tw.seen[key] = now\n\treturn ok && now.Sub(at) < w.ttl\n",
)
WINDOW_TEST = (
    'package dedup\n\nimport (\n\t"testing"\n\t"time"\n)\n\n'
    "func TestWindowExpiresOldKeys(t *testing.T) {\n\tw := NewWindow(time.Minute)\n"
    '\tstart := time.Unix(0, 0)\n\tw.Seen("a", start)\n'
    '\tif w.Seen("a", start.Add(2*time.Minute)) {\n'
    '\t\tt.Errorf("Seen(%q) = true after expiry, want false", "a")\n\t}\n}\n'
)

PRODUCER_BAD = (
    'package kafka\n\nimport (\n\t"fmt"\n\t"time"\n)\n\n'
    "// Topic is the topic name for a stream.\nfunc Topic(stream string) string {\n"
    '\treturn fmt.Sprintf("ingest.%s", stream)\n}\n'
)
PRODUCER_GOOD = 'package kafka\n\nimport "fmt"\n\n' + PRODUCER_BAD.split(")\n\n", 1)[1]
PRODUCER_TEST = (
    'package kafka\n\nimport "testing"\n\nfunc TestTopic(t *testing.T) {\n'
    '\tif Topic("clicks") != "ingest.clicks" {\n\t\tt.Fatal("bad topic")\n\t}\n}\n'
)

WAL_BAD = (
    "use std::io::Read;\n\n"
    "/// Replays the records of a write-ahead log: each is a u32 length then the bytes.\n"
    "pub fn replay(mut log: &[u8]) -> Vec<Vec<u8>> {\n    let mut records = Vec::new();\n"
    "    while !log.is_empty() {\n        let mut len = [0u8; 4];\n"
    "        log.read_exact(&mut len).unwrap();\n"
    "        let mut record = vec![0u8; u32::from_le_bytes(len) as usize];\n"
    "        log.read_exact(&mut record).unwrap();\n        records.push(record);\n    }\n"
    "    records\n}\n\n#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n"
    "    fn replay_ignores_torn_tail() {\n        let mut log = vec![3, 0, 0, 0, b'a', b'b', b'c'];\n"
    "        log.extend_from_slice(&[9, 0, 0, 0, b'x']); // a crash cut the last record\n"
    '        assert_eq!(replay(&log), vec![b"abc".to_vec()]);\n    }\n}\n'
)
WAL_GOOD = WAL_BAD.replace(
    "        log.read_exact(&mut len).unwrap();\n",
    "        if log.read_exact(&mut len).is_err() {\n            break;\n        }\n",
).replace(
    "        log.read_exact(&mut record).unwrap();\n",
    "        if log.read_exact(&mut record).is_err() {\n            break; // a torn tail: stop\n        }\n",
)

PAGER_BAD = (
    "pub struct Page {\n    pub id: u64,\n    pub bytes: Vec<u8>,\n}\n\n"
    "pub fn flush(pages: &mut Vec<Page>, dirty: Vec<Page>) -> usize {\n"
    "    let mut written = 0;\n    for page in dirty {\n        pages.push(page);\n"
    "        written += page.bytes.len();\n    }\n    written\n}\n\n"
    "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn flush_counts_bytes() {\n"
    "        let mut pages = Vec::new();\n"
    "        let dirty = vec![Page { id: 1, bytes: vec![0; 4096] }];\n"
    "        assert_eq!(flush(&mut pages, dirty), 4096);\n    }\n}\n"
)
PAGER_GOOD = PAGER_BAD.replace(
    "        pages.push(page);\n        written += page.bytes.len();\n",
    "        written += page.bytes.len();\n        pages.push(page);\n",
)

PY_TOOL = [sys.executable, "-m", "pytest", "--version"]
GO_TOOL = ["go", "version"]
RS_TOOL = ["cargo", "--version"]
CASES: dict[str, Case] = {
    "pay-fx-thousands": Case(
        PY_ROOT, PY_TOOL, ["pytest", "tests/test_fx.py"],
        {"pyproject.toml": PYPROJECT, "src/payments/__init__.py": "", "tests/test_fx.py": FX_TEST},
        {"src/payments/fx.py": FX_BAD}, {"src/payments/fx.py": FX_GOOD},
    ),
    "pay-stripe-retry": Case(
        PY_ROOT, PY_TOOL, ["pytest", "tests/test_stripe_retry.py"],
        {"pyproject.toml": PYPROJECT, "src/payments/__init__.py": "",
         "tests/test_stripe_retry.py": RETRY_TEST},
        {"src/payments/stripe_retry.py": RETRY_BAD}, {"src/payments/stripe_retry.py": RETRY_GOOD},
    ),
    "pay-refund-amount-string": Case(
        PY_ROOT, PY_TOOL, ["pytest", "tests/test_refunds.py"],
        {"pyproject.toml": PYPROJECT, "src/payments/__init__.py": "", "src/payments/api/__init__.py": "",
         "tests/test_refunds.py": REFUND_TEST},
        {"src/payments/api/schemas.py": REFUND_BAD}, {"src/payments/api/schemas.py": REFUND_GOOD},
    ),
    "pay-webhook-dashboard-events": Case(
        PY_ROOT, PY_TOOL, ["pytest", "tests/test_webhook_replay.py"],
        {"pyproject.toml": PYPROJECT, "src/payments/__init__.py": "", "src/payments/webhooks/__init__.py": "",
         "tests/test_webhook_replay.py": WEBHOOK_TEST},
        {"src/payments/webhooks/replay.py": WEBHOOK_BAD},
        {"src/payments/webhooks/replay.py": WEBHOOK_STILL_BAD},
    ),
    "go-ring-wrap-panic": Case(
        GO_ROOT, GO_TOOL, ["go", "test", "./..."],
        {"go.mod": GO_MOD, "internal/ring/ring_test.go": RING_TEST},
        {"internal/ring/ring.go": RING_BAD}, {"internal/ring/ring.go": RING_GOOD},
    ),
    "go-dedup-window-expiry": Case(
        GO_ROOT, GO_TOOL, ["go", "test", "./..."],
        {"go.mod": GO_MOD, "internal/dedup/window_test.go": WINDOW_TEST},
        {"internal/dedup/window.go": WINDOW_BAD}, {"internal/dedup/window.go": WINDOW_GOOD},
    ),
    "go-producer-unused-import": Case(
        GO_ROOT, GO_TOOL, ["go", "test", "./..."],
        {"go.mod": GO_MOD, "internal/kafka/producer_test.go": PRODUCER_TEST},
        {"internal/kafka/producer.go": PRODUCER_BAD}, {"internal/kafka/producer.go": PRODUCER_GOOD},
    ),
    "rs-wal-torn-tail": Case(
        RS_ROOT, RS_TOOL, ["cargo", "test", "--offline"],
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": "pub mod wal;\n"},
        {"src/wal.rs": WAL_BAD}, {"src/wal.rs": WAL_GOOD}, {"RUST_BACKTRACE": "0"},
    ),
    "rs-flush-moved-page": Case(
        RS_ROOT, RS_TOOL, ["cargo", "test", "--offline"],
        {"Cargo.toml": CARGO_TOML, "src/lib.rs": "pub mod pager;\n"},
        {"src/pager.rs": PAGER_BAD}, {"src/pager.rs": PAGER_GOOD}, {"RUST_BACKTRACE": "0"},
    ),
}  # fmt: skip


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run_case(name: str, case: Case) -> list[dict[str, object]] | None:
    """Run ``case`` twice (buggy, then edited); write ``<name>-1.txt`` / ``-2.txt``; their manifest rows."""
    if shutil.which(case.tool[0]) is None and not Path(case.tool[0]).exists():
        print(f"skip {name}: {case.tool[0]} is not installed")
        return None
    tool = subprocess.run(case.tool, capture_output=True, text=True, check=False).stdout.strip()
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory(prefix="fixmem-run-") as tmp:
        root = Path(tmp)
        _write(root, case.common)
        env = {**os.environ, "NO_COLOR": "1", "CARGO_TERM_COLOR": "never", **case.env}
        env["PATH"] = f"{Path(sys.executable).parent}:{env['PATH']}"
        for step, files in ((1, case.first), (2, case.second)):
            _write(root, files)
            done = subprocess.run(
                case.command, cwd=root, env=env, capture_output=True, text=True, check=False, timeout=600
            )
            output = (
                (done.stdout + done.stderr).replace(str(root.resolve()), case.root).replace(tmp, case.root)
            )
            (HERE / f"{name}-{step}.txt").write_text(output)
            rows.append({"command": " ".join(case.command), "exit_code": done.returncode, "tool": tool})
    return rows


def main(names: list[str]) -> None:
    """Run the named cases (all by default) and update ``manifest.json``."""
    manifest_path = HERE / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    for name in names or sorted(CASES):
        rows = run_case(name, CASES[name])
        if rows is not None:
            manifest[name] = rows
            print(name, [row["exit_code"] for row in rows])
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
