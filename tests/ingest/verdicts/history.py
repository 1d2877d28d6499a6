"""A real git repository with a known history: a revert by git, one by hand, a squash merge, a cherry-pick."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

BASE = """def charge(card, amount):
    client = PaymentClient(api_key=settings.stripe_key)
    response = client.create_charge(card=card, amount=amount)
    return response.charge_identifier
"""


@dataclass
class History:
    """The repository and the shas of its commits, by role."""

    path: Path
    shas: dict[str, str] = field(default_factory=dict)
    clock: float = field(default_factory=lambda: time.time() - 86400)

    def git(self, *args: str) -> str:
        self.clock += 60
        stamp = f"@{int(self.clock)} +0000"
        env = {
            **os.environ,
            "GIT_AUTHOR_DATE": stamp,
            "GIT_COMMITTER_DATE": stamp,
            "GIT_CONFIG_NOSYSTEM": "1",
        }
        done = subprocess.run(
            ["git", "-C", str(self.path), *args], capture_output=True, text=True, env=env, check=True
        )
        return done.stdout.strip()

    def commit(self, role: str, message: str, files: dict[str, str]) -> str:
        for name, text in files.items():
            (self.path / name).write_text(text)
            self.git("add", name)
        self.git("commit", "-q", "-m", message)
        self.shas[role] = self.git("rev-parse", "HEAD")
        return self.shas[role]


REFUND = (
    "def refund(charge_identifier):\n"
    "    return PaymentClient(api_key=settings.stripe_key).refund(charge_identifier)\n"
)
REPORT = "def monthly_report(ledger):\n    totals = summarize_ledger(ledger)\n"
AUDIT = (
    "def audit_failed_charge(charge_identifier):\n"
    "    logger.warning('charge failed: %s', charge_identifier)\n"
)


def build(path: Path) -> History:
    """main: base, fix_login, add_refund, a `git revert` of fix_login, a hand-made undo of add_refund, the
    squash merge of branch ``feature`` (draft, final) and the cherry-pick of branch ``hotfix``'s commit."""
    path.mkdir()
    h = History(path)
    h.git("init", "-q", "-b", "main")
    h.git("config", "user.email", "dev@example.com")
    h.git("config", "user.name", "Dev")
    h.commit("base", "base", {"pay.py": BASE, "notes.md": "payments\n"})
    old = "client.create_charge(card=card, amount=amount)"
    fixed = BASE.replace(old, old[:-1] + ", timeout=settings.charge_timeout)")
    h.commit("fix_login", "fix the charge timeout", {"pay.py": fixed})
    reasons = "REFUND_REASONS = ('duplicate', 'fraudulent')\n"
    h.commit("add_refund", "add refunds", {"refund.py": REFUND + reasons})
    h.git("revert", "--no-edit", h.shas["fix_login"])
    h.shas["revert_login"] = h.git("rev-parse", "HEAD")
    h.commit("undo_refund", "tidy up", {"refund.py": "\n"})
    h.git("checkout", "-q", "-b", "feature")
    h.commit("draft", "wip", {"report.py": REPORT + "    return render_draft(totals)\n"})
    final = REPORT + "    return render_report(totals, currency=ledger.currency)\n"
    h.commit("final", "finish the report", {"report.py": final})
    h.git("checkout", "-q", "main")
    h.git("merge", "-q", "--squash", "feature")
    h.git("commit", "-q", "-m", "monthly report (#1)")
    h.shas["squash"] = h.git("rev-parse", "HEAD")
    h.git("checkout", "-q", "-b", "hotfix", h.shas["base"])
    h.commit("hotfix", "log failed charges", {"audit.py": AUDIT})
    h.git("checkout", "-q", "main")
    h.git("cherry-pick", h.shas["hotfix"])
    h.shas["picked"] = h.git("rev-parse", "HEAD")
    return h
