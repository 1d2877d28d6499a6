"""``fixmem status`` counts a SIGKILLed worker as silent, not alive, though RQ keeps its key two minutes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis
from rq import Worker

from ingest.status import worker_liveness
from tests.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]


def test_a_killed_worker_turns_silent_while_its_key_lives_on(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FIXMEM_")}
    env |= {"FIXMEM_REDIS_URL": redis_url, "FIXMEM_DATA_DIR": str(tmp_path)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fixmem.cli.children", "worker"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        wait_for(
            lambda: worker_liveness(redis_client, now=time.time(), alive_within=15) == (1, 0),
            120, "the worker to beat",
        )  # fmt: skip
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    wait_for(
        lambda: worker_liveness(redis_client, now=time.time(), alive_within=3) == (0, 1),
        30, "the killed worker to fall silent",
    )  # fmt: skip
    assert Worker.count(connection=redis_client) == 1  # RQ's count (what status showed) still has it
