"""The web UI in a real browser: Debian's Chromium (``/usr/bin/chromium``) driven by Playwright, against the
real server (uvicorn on a free port, a real Redis, real fix logs; ``conftest.ui``).

Playwright never downloads a browser here: it is pointed at the system Chromium. Without it these tests
skip with a message, except under ``CI=true``, where a missing Chromium (or Playwright) fails the run.
Each page is screenshotted under the test's tmp dir; with ``FIXMEM_UI_DOCS_SCREENSHOTS=1`` the two
docs/getting-started.md shows are written to ``docs/`` too.
"""

from __future__ import annotations

import http.server
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from store import entry_id
from tests.fixmem.ui.conftest import ALICE, BOBS, OPS, PROJECT, XSS_TASK, Ui

CHROMIUM = Path("/usr/bin/chromium")
DOCS = Path(__file__).resolve().parents[3] / "docs"
IN_CI = os.environ.get("CI", "").lower() == "true"


def _unavailable(why: str) -> None:
    if IN_CI:
        pytest.fail(
            f"CI=true but {why}: .ci/run installs Debian's chromium and the test extras", pytrace=False
        )
    pytest.skip(f"browser tests skipped: {why} (apt-get install chromium; pip install -e '.[test]')")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _unavailable(f"no Chromium at {CHROMIUM}")
    try:
        from playwright.sync_api import sync_playwright  # noqa: PLC0415
    except ImportError:
        _unavailable("Playwright for Python is not installed")
    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start; a container's small
        # /dev/shm crashes tabs otherwise.
        launched = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        try:
            yield launched
        finally:
            launched.close()


class Shots:
    """Screenshots of the pages a test visits, under its tmp dir."""

    def __init__(self, where: Path) -> None:
        self.where = where
        where.mkdir(parents=True, exist_ok=True)

    def take(self, page: Any, name: str) -> Path:
        path = self.where / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 1000
        if os.environ.get("FIXMEM_UI_DOCS_SCREENSHOTS") == "1" and name in {"ui-projects", "ui-entries"}:
            page.screenshot(path=str(DOCS / f"{name}.png"))  # the first screenful: small enough for git
        return path


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    return Shots(tmp_path / "screenshots")


@pytest.fixture
def page(browser: Any, ui: Ui) -> Iterator[Any]:
    context = browser.new_context(
        base_url=ui.url, viewport={"width": 1280, "height": 900}, accept_downloads=True
    )
    opened = context.new_page()
    dialogs: list[str] = []
    opened.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    opened.dialogs = dialogs
    try:
        yield opened
    finally:
        assert not dialogs, f"a script ran in the page: {dialogs}"
        context.close()


def _login(page: Any, token: str) -> None:
    page.goto("/ui/projects")
    assert page.url.endswith("/ui/login?next=%2Fui%2Fprojects")
    page.fill("input[name=token]", token)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def test_log_in_filter_open_an_entry_search_forget_and_see_recall_change(
    page: Any, ui: Ui, shots: Shots
) -> None:
    _login(page, ALICE)
    assert page.url.endswith("/ui/projects")
    assert page.locator("table.projects tbody tr").count() == 2
    assert page.locator("svg.chart path").count() >= 4
    shots.take(page, "ui-projects")

    page.click(f"text={PROJECT}")
    assert page.locator("p.count").inner_text().startswith("60 of 60 entries")
    page.select_option("select[name=outcome]", "fixed")
    page.fill("input[name=file]", "csv_loader")
    page.click("form.filters button[type=submit]")
    page.wait_for_load_state()
    assert page.locator("p.count").inner_text().startswith("1 of 60 entries")
    page.goto(f"/ui/entries?project={PROJECT}")
    shots.take(page, "ui-entries")

    page.click("text=csv loader crashes on a missing delimiter")
    assert page.locator("h1").inner_text() == "csv loader crashes on a missing delimiter"
    assert page.locator("text=did not hold").count() == 1
    shots.take(page, "ui-entry")
    target = entry_id("alice", PROJECT, "ev-59")

    def search() -> str:
        page.goto(f"/ui/search?project={PROJECT}")
        page.fill("textarea[name=q]", "the csv loader crashes when the delimiter is missing")
        page.fill("textarea[name=error]", "KeyError: 'delimiter' in load_csv")
        page.click("form.stack button[type=submit]")
        page.wait_for_load_state()
        return str(page.locator("#prompt-block").inner_text())

    block = search()
    assert (
        block.startswith("Past fixes in this project:")
        and "csv loader crashes on a missing delimiter" in block
    )
    assert page.locator("table.recalled").inner_text().count("same error") >= 1
    shots.take(page, "ui-search")

    page.goto(f"/ui/entry/{target}?project={PROJECT}")
    page.click("text=Forget this entry…")
    assert page.locator("h1").inner_text() == "Forget 1 entry?"
    shots.take(page, "ui-forget-confirm")
    page.click("text=Yes, forget 1")
    page.wait_for_load_state()
    assert "Forgot 1 entry" in page.locator("p.notice").inner_text()
    assert "csv loader crashes on a missing delimiter" not in search()


def test_approve_a_suggested_note_and_download_it(page: Any, ui: Ui, shots: Shots) -> None:
    _login(page, ALICE)
    page.goto(f"/ui/review?project={PROJECT}")
    card = page.locator("article.suggestion").first
    assert "failed again" in card.inner_text()
    assert "did not hold" in card.locator("input[name=subject]").input_value()
    card.locator("input[name=subject]").fill("csv: tabs break the delimiter default")
    card.locator("select[name=kind]").select_option("convention")
    shots.take(page, "ui-review")
    card.locator("button[value=approve]").click()
    page.wait_for_load_state()
    assert "Approved" in page.locator("p.notice").inner_text()
    assert page.locator("article.suggestion").count() == 0
    with page.expect_download() as done:
        page.click("text=Download the 1 approved note")
    text = Path(done.value.path()).read_text()
    assert text.startswith("## convention: csv: tabs break the delimiter default")


def test_an_operator_replays_a_dead_letter(page: Any, ui: Ui, shots: Shots) -> None:
    _login(page, OPS)
    assert page.url.endswith("/ui/pipeline")
    assert page.locator("#dead-count").inner_text() == "2"
    shots.take(page, "ui-pipeline")
    row = page.locator("table.letters tr", has_text="processing_failed")
    row.locator("input[type=checkbox]").check()
    page.click("button[value=replay]")
    assert page.locator("h1").inner_text() == "Replay 1 dead letter?"
    page.click("text=Yes, replay 1")
    page.wait_for_load_state()
    assert "Replayed 1 dead letter(s)" in page.locator("p.notice").inner_text()
    assert page.locator("#dead-count").inner_text() == "1"
    assert ui.redis.xlen(ui.api.ctx.settings.stream) == 1


def test_markup_from_agent_logs_is_text_and_runs_nothing(page: Any, ui: Ui, shots: Shots) -> None:
    _login(page, ALICE)
    page.goto(f"/ui/entry/{entry_id('alice', PROJECT, 'ev-58')}?project={PROJECT}")
    assert page.locator("dl.fields pre").first.inner_text() == XSS_TASK
    assert page.locator("main script").count() == 0 and page.locator("main img").count() == 0
    shots.take(page, "ui-xss-probe")
    page.goto(f"/ui/entries?project={PROJECT}&q=onerror")
    assert page.locator("td.task a").inner_text() == XSS_TASK
    # the fixture's `page` fails the test if any alert() ran


def test_alice_cannot_reach_bobs_project_nor_the_pipeline(page: Any, ui: Ui, shots: Shots) -> None:
    _login(page, ALICE)
    page.goto(f"/ui/entries?project={BOBS}")
    assert page.locator("h1").inner_text() == "no fix memory for this project"
    shots.take(page, "ui-isolation")
    response = page.goto("/ui/pipeline")
    assert response.status == 403
    assert page.locator("nav").inner_text().count("Pipeline") == 0


@pytest.fixture
def other_site(tmp_path: Path, ui: Ui) -> Iterator[str]:
    """A page on another origin (another port) with a form that posts a forget to the UI."""
    root = tmp_path / "evil"
    root.mkdir()
    target = entry_id("alice", PROJECT, "ev-1")
    (root / "index.html").write_text(
        f'<form method="post" action="{ui.url}/ui/forget"><input name="project" value="{PROJECT}">'
        f'<input name="ids" value="{target}"><input name="confirm" value="yes">'
        '<input name="csrf" value="guess">'
        '<button id="go">win a prize</button></form>'
    )
    handler = lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(root))  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/index.html"
    finally:
        server.shutdown()


def test_a_form_on_another_site_cannot_forget_an_entry(page: Any, ui: Ui, other_site: str) -> None:
    _login(page, ALICE)
    page.goto(other_site)
    page.click("#go")
    page.wait_for_load_state()
    assert "posted from another site" in page.locator("h1").inner_text()
    assert entry_id("alice", PROJECT, "ev-1") in {
        e.id for e in ui.api.ctx.store.read("alice", PROJECT).entries
    }


def test_pages_fit_a_phone(browser: Any, ui: Ui, shots: Shots) -> None:
    context = browser.new_context(base_url=ui.url, viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        phone = context.new_page()
        _login(phone, ALICE)
        for path, name in [
            ("/ui/projects", "phone-projects"),
            (f"/ui/entries?project={PROJECT}", "phone-entries"),
        ]:
            phone.goto(path)
            width = phone.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{path} scrolls sideways on a phone ({width}px)"
            shots.take(phone, name)
    finally:
        context.close()


def test_a_missing_chromium_skips_with_a_message_outside_ci_and_fails_under_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tests.fixmem.ui.test_ui_browser as module  # noqa: PLC0415

    monkeypatch.setattr(module, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match=r"no Chromium at /x .*apt-get install chromium"):
        module._unavailable("no Chromium at /x")
    monkeypatch.setattr(module, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="CI=true but no Chromium at /x"):
        module._unavailable("no Chromium at /x")
