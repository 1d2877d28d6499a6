"""The web UI over real HTTP (uvicorn, httpx, a real Redis and real fix logs): login, the pages, forget,
review, pipeline, and the XSS, CSRF and isolation probes. The browser tests drive the same pages in
Chromium; these run everywhere and pin the security properties one request at a time."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import httpx
import orjson
import pytest

from store import entry_id
from store.notes.review import read_state, state_path
from store.verdicts import Verdict
from tests.fixmem.api_server import running_api
from tests.fixmem.ui.conftest import (
    ALICE,
    BOB,
    BOB_TASK,
    BOBS,
    OPS,
    PROJECT,
    SECOND,
    VALID_LETTER_TURN,
    Ui,
    csrf_of,
    login,
    make_entry,
)

XSS_ID = entry_id("alice", PROJECT, "ev-58")
T_VERDICT = 1_767_000_000.0
FIXED_THEN_BROKEN = entry_id("alice", PROJECT, "ev-59")
BOB_ID = entry_id("bob", BOBS, "ev-1")


def _ids(html: str) -> list[str]:
    return re.findall(r'name="ids" value="(fix-[0-9a-f]{16})"', html)


# -- login and sessions ------------------------------------------------------------------------------------


def test_login_sets_an_httponly_samesite_strict_session_cookie(ui: Ui) -> None:
    client = ui.client()
    assert client.get("/ui/projects").headers["location"] == "/ui/login?next=%2Fui%2Fprojects"
    done = login(client, ALICE)
    assert done.status_code == 303 and done.headers["location"] == "/ui/projects"
    cookie = next(c for c in done.headers.get_list("set-cookie") if c.startswith("fixmem_session="))
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
    assert ALICE not in cookie  # the session id is random; the token is never in a cookie
    page = client.get("/ui/projects")
    assert page.status_code == 200 and PROJECT in page.text and SECOND in page.text
    client.post("/ui/logout", data={"csrf": csrf_of(page.text)})
    assert client.get("/ui/projects").status_code == 303  # the session is gone


def test_a_wrong_token_or_a_stale_login_form_is_refused(ui: Ui) -> None:
    client = ui.client()
    assert login(client, "not-a-token").status_code == 401
    assert client.post("/ui/login", data={"token": ALICE, "nonce": "forged"}).status_code == 403
    assert client.get("/ui/projects").status_code == 303  # still logged out


def test_login_never_redirects_off_the_ui(ui: Ui) -> None:
    client = ui.client()
    page = client.get("/ui/login", params={"next": "//evil.example/ui"})
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce is not None
    done = client.post(
        "/ui/login", data={"token": ALICE, "nonce": nonce.group(1), "next": "https://evil.example/"}
    )
    assert done.headers["location"] == "/ui/projects"


def test_every_page_takes_a_bearer_token_too(ui: Ui) -> None:
    headers = {"Authorization": f"Bearer {ALICE}"}
    page = httpx.get(f"{ui.url}/ui/entries", params={"project": PROJECT}, headers=headers)
    assert page.status_code == 200 and "60 of 60 entries" in page.text
    wrong = httpx.get(f"{ui.url}/ui/projects", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401


# -- the pages -----------------------------------------------------------------------------------------


def test_projects_show_counts_ratios_a_chart_and_last_activity(ui: Ui) -> None:
    page = ui.client(ALICE).get("/ui/projects")
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    row = page.text.split(quote(PROJECT, safe=""), 1)[1].split("</tr>", 1)[0]
    assert ">60<" in row  # entries
    assert "21 fixed (35%)" in row  # 19 of ev-1..57 (n % 3 == 0), the XSS probe, the csv fix
    assert "<svg" in row and 'class="o-partial"' in row
    assert "2025-12-08 08:53 UTC" in row  # ev-60: T0 + 60 days, the last activity


def test_projects_show_claimed_vs_verified_and_the_entry_every_verdict_with_its_link(ui: Ui) -> None:
    judged = "github.com/acme/judged"
    store = ui.api.ctx.store
    store.append("alice", judged, [make_entry("alice", judged, n, f"judged fix {n}") for n in range(4)])
    one, two = (entry_id("alice", judged, f"ev-{n}") for n in range(2))
    store.apply_verdicts("alice", judged, [Verdict(one, "ci", "fixed", T_VERDICT, "CI run 12", "commit")])
    store.apply_verdicts("alice", judged, [Verdict(two, "merged", "fixed", T_VERDICT, "landed", "content")])
    store.apply_verdicts(
        "alice", judged, [Verdict(one, "revert", "partial", T_VERDICT + 60, "reverted by 9f8e7d", "content")]
    )
    client = ui.client(ALICE)
    row = client.get("/ui/projects").text.split(quote(judged, safe=""), 1)[1].split("</tr>", 1)[0]
    assert "claimed 100% fixed" in row and "verified 50% fixed" in row and "coverage 50%" in row
    page = client.get(f"/ui/entry/{one}", params={"project": judged}).text
    table = page.split("Verdicts received", 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr[^>]*>(.*?)</tr>", table.split("<tbody>", 1)[1])
    assert len(rows) == 2  # the revert in effect, newest first, and the ci verdict it overturned
    assert "revert <strong>(in effect)</strong>" in rows[0] and "changes in the commit" in rows[0]
    assert "reverted by 9f8e7d" in rows[0] and "2025-12-29" in rows[0]  # its time
    assert "ci" in rows[1] and "the commit the turn ended at" in rows[1] and "in effect" not in rows[1]


def test_projects_page_filters_sorts_and_pages(ui: Ui) -> None:
    """53 projects were once one 6,484-px page: now 50 a page, a filter on the key and four orders."""
    store = ui.api.ctx.store
    for n in range(60):
        key = f"github.com/acme/svc-{n:02d}"
        store.append("alice", key, [make_entry("alice", key, n, f"svc {n}: a fix")])
    client = ui.client(ALICE)

    def keys(**params: str) -> list[str]:
        page = client.get("/ui/projects", params=params)
        assert page.status_code == 200, page.text
        return re.findall(r'class="key-cell"><a href="[^"]*">([^<]+)</a>', page.text)

    first = keys()
    assert len(first) == 50 and len(keys(page="2")) == 12  # 60 + PROJECT + SECOND
    assert "62 of 62 projects, page 1 of 2" in client.get("/ui/projects").text
    assert first[0] == PROJECT  # its last activity, T0 + 60 days, is after svc-59's
    assert keys(q="SVC-1") == [f"github.com/acme/svc-{n}" for n in range(19, 9, -1)]  # newest first
    assert keys(q="svc-1", sort="name") == [f"github.com/acme/svc-{n}" for n in range(10, 20)]
    assert keys(q="nothing like it") == []
    assert keys(sort="fixes")[0] == PROJECT  # 60 entries
    assert keys(sort="no-such-order") == first
    assert len(keys(page="999")) == 12  # past the end: the last page


def test_entries_filter_by_outcome_file_error_text_and_dates_and_page(ui: Ui) -> None:
    client = ui.client(ALICE)

    def shown(**params: str) -> list[str]:
        page = client.get("/ui/entries", params={"project": PROJECT, **params})
        assert page.status_code == 200, page.text
        return _ids(page.text)

    assert len(shown()) == 50 and len(shown(page="2")) == 10
    partial = shown(outcome="partial")
    assert len(partial) == 20 and entry_id("alice", PROJECT, "ev-60") in partial
    assert shown(file="csv_loader") == [entry_id("alice", PROJECT, f"ev-{n}") for n in (60, 59)]
    assert shown(error="could not parse", q="mod7 ") == [entry_id("alice", PROJECT, "ev-7")]
    assert shown(since="2025-10-10", until="2025-10-11") == [
        entry_id("alice", PROJECT, f"ev-{n}")
        for n in (2, 1)  # T0 is 2025-10-09 08:53 UTC
    ]
    bad = client.get("/ui/entries", params={"project": PROJECT, "since": "yesterday"})
    assert "since: expected a day as YYYY-MM-DD" in bad.text and len(_ids(bad.text)) == 50


def test_an_entry_shows_every_field_lineage_marks_and_extra_fields(ui: Ui) -> None:
    page = ui.client(ALICE).get(f"/ui/entry/{FIXED_THEN_BROKEN}", params={"project": PROJECT})
    text = page.text
    for expected in [
        "csv loader crashes on a missing delimiter", "KeyError: &#39;delimiter&#39; in load_csv",
        "src/csv_loader.py", "parse_mod59", "pytest -q", "split the input of parse_mod59", "abc1234",
        "ev-59", "did not hold", entry_id("alice", PROJECT, "ev-60"), "outcome_source", "tests",
        "changes", "default the delimiter to &#39;,&#39;", "not checked (no checkout",
    ]:  # fmt: skip
        assert expected in text, expected


# -- XSS --------------------------------------------------------------------------------------------------


def _no_markup_from_the_log(html: str) -> None:
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#39;xss&#39;)&lt;/script&gt;" in html  # shown as text


def test_a_task_holding_markup_renders_as_text_everywhere(ui: Ui) -> None:
    client = ui.client(ALICE)
    _no_markup_from_the_log(client.get("/ui/entries", params={"project": PROJECT}).text)
    entry = client.get(f"/ui/entry/{XSS_ID}", params={"project": PROJECT}).text
    _no_markup_from_the_log(entry)
    assert "&lt;img src=x onerror=alert(1)&gt;" in entry
    searched = client.post(
        "/ui/search", data={"csrf": csrf_of(entry), "project": PROJECT, "q": "script alert xss parser"}
    )
    _no_markup_from_the_log(searched.text)
    confirm = client.post("/ui/forget", data={"csrf": csrf_of(entry), "project": PROJECT, "ids": XSS_ID})
    _no_markup_from_the_log(confirm.text)


def test_a_dead_letter_payload_holding_markup_renders_as_text(ui: Ui) -> None:
    page = ui.client(OPS).get("/ui/pipeline")
    assert page.status_code == 200
    assert "<script>alert(2)" not in page.text and "&lt;script&gt;alert(2)&lt;/script&gt;" in page.text


# -- CSRF -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("csrf", "headers"),
    [
        (None, {}),
        ("forged", {}),
        ("real", {"Origin": "http://evil.example"}),
        ("real", {"Sec-Fetch-Site": "cross-site"}),
    ],
    ids=["no-token", "wrong-token", "other-origin", "cross-site-fetch"],
)
def test_a_post_without_the_sessions_csrf_token_or_from_another_site_changes_nothing(
    ui: Ui, csrf: str | None, headers: dict[str, str]
) -> None:
    client = ui.client(ALICE)
    real = csrf_of(client.get("/ui/projects").text)
    form = {"project": PROJECT, "ids": XSS_ID, "confirm": "yes"}
    if csrf is not None:
        form["csrf"] = real if csrf == "real" else csrf
    done = client.post("/ui/forget", data=form, headers=headers)
    assert done.status_code == 403
    assert XSS_ID in {e.id for e in ui.api.ctx.store.read("alice", PROJECT).entries}


def test_a_cross_site_login_is_refused(ui: Ui) -> None:
    client = ui.client()
    page = client.get("/ui/login")
    nonce = re.search(r'name="nonce" value="([^"]+)"', page.text)
    assert nonce is not None
    done = client.post(
        "/ui/login", data={"token": ALICE, "nonce": nonce.group(1)}, headers={"Origin": "http://evil.example"}
    )
    assert done.status_code == 403 and "fixmem_session" not in done.headers.get("set-cookie", "")


# -- isolation ------------------------------------------------------------------------------------------


def test_alice_never_sees_bobs_projects_or_entries_by_any_url(ui: Ui) -> None:
    client = ui.client(ALICE)
    csrf = csrf_of(client.get("/ui/projects").text)
    missing = client.get("/ui/entries", params={"project": "github.com/nobody/nothing"})
    responses = [
        client.get("/ui/projects"),
        client.get("/ui/search"),
        client.get("/ui/review"),
        client.get("/ui/entries", params={"project": BOBS}),
        client.get(f"/ui/entry/{BOB_ID}", params={"project": BOBS}),
        client.get(f"/ui/entry/{BOB_ID}", params={"project": PROJECT}),
        client.get("/ui/review", params={"project": BOBS}),
        client.get("/ui/review/memory.md", params={"project": BOBS}),
        client.post("/ui/forget", data={"csrf": csrf, "project": BOBS, "ids": BOB_ID, "confirm": "yes"}),
        client.post("/ui/forget", data={"csrf": csrf, "project": PROJECT, "ids": BOB_ID, "confirm": "yes"}),
        client.post("/ui/search", data={"csrf": csrf, "project": BOBS, "q": "garden gate"}),
        client.post("/ui/review", data={"csrf": csrf, "project": BOBS, "fix_id": BOB_ID, "action": "reject"}),
    ]
    for response in responses:
        assert BOB_TASK not in response.text and BOBS not in response.text.replace(f'value="{BOBS}"', "")
        assert "garden" not in response.text.replace("garden gate</textarea>", "")
    assert responses[3].status_code == 404 and responses[3].text == missing.text
    assert [r.status_code for r in responses[4:9]] == [404] * 5
    assert responses[9].status_code == 422  # as for any id that is not in the project: nothing chosen
    assert "no fix memory for this project" in responses[10].text
    assert BOB_ID in {e.id for e in ui.api.ctx.store.read("bob", BOBS).entries}  # not forgotten
    assert not state_path(ui.api.ctx.settings.data_dir, "alice", BOBS).exists()


def test_only_operators_reach_the_pipeline_page(ui: Ui) -> None:
    for token in (ALICE, BOB):
        assert ui.client(token).get("/ui/pipeline").status_code == 403
        denied = httpx.get(f"{ui.url}/ui/pipeline", headers={"Authorization": f"Bearer {token}"})
        assert denied.status_code == 403 and "refused in a test" not in denied.text
    assert ui.client().get("/ui/pipeline").status_code == 303  # to the login form
    ops = ui.client(OPS)
    assert ops.get("/ui/pipeline").status_code == 200
    assert ops.get("/ui/projects").status_code == 403  # an operator owns no fix memory
    posted = ui.client(ALICE).post("/ui/pipeline/dead-letters", data={"action": "purge", "all": "yes"})
    assert posted.status_code == 403 and ui.redis.xlen(ui.api.ctx.settings.dead_stream) == 2


# -- forget --------------------------------------------------------------------------------------------------


def _recalled(ui: Ui, q: str) -> list[str]:
    found = httpx.get(
        f"{ui.url}/api/fix-memory", params={"project_id": PROJECT, "q": q, "k": 10},
        headers={"Authorization": f"Bearer {ALICE}"},
    )  # fmt: skip
    return [r["entry"]["id"] for r in found.json()["recalled"]]


def test_forget_asks_first_then_the_entries_vanish_from_recall(ui: Ui) -> None:
    client = ui.client(ALICE)
    targets = [entry_id("alice", PROJECT, f"ev-{n}") for n in (59, 60)]
    assert set(targets) <= set(_recalled(ui, "csv loader crashes delimiter"))
    csrf = csrf_of(client.get("/ui/projects").text)
    asked = client.post("/ui/forget", data={"csrf": csrf, "project": PROJECT, "ids": targets})
    assert asked.status_code == 200 and "Forget 2 entries?" in asked.text
    assert set(targets) <= set(_recalled(ui, "csv loader crashes delimiter"))  # nothing done yet
    done = client.post(
        "/ui/forget", data={"csrf": csrf, "project": PROJECT, "ids": targets, "confirm": "yes"}
    )
    assert done.status_code == 303
    assert "Forgot 2 entries" in client.get(done.headers["location"]).text
    assert not set(targets) & set(_recalled(ui, "csv loader crashes delimiter"))


# -- review ----------------------------------------------------------------------------------------------


def test_a_rejected_suggestion_does_not_come_back(ui: Ui) -> None:
    client = ui.client(ALICE)
    page = client.get("/ui/review", params={"project": PROJECT})
    assert f'name="fix_id" value="{FIXED_THEN_BROKEN}"' in page.text and "did not hold" in page.text
    done = client.post(
        "/ui/review",
        data={
            "csrf": csrf_of(page.text),
            "project": PROJECT,
            "fix_id": FIXED_THEN_BROKEN,
            "action": "reject",
        },
    )
    assert done.status_code == 303
    again = client.get(done.headers["location"])
    assert "will not come back" in again.text and FIXED_THEN_BROKEN not in again.text.split("</h1>", 1)[1]
    stored = read_state(state_path(ui.api.ctx.settings.data_dir, "alice", PROJECT))
    assert stored.rejected == [FIXED_THEN_BROKEN]


def test_an_approved_note_without_a_workspace_is_offered_as_a_download(ui: Ui) -> None:
    client = ui.client(ALICE)
    page = client.get("/ui/review", params={"project": PROJECT})
    assert "approved notes are kept for you to download" in page.text
    done = client.post(
        "/ui/review",
        data={
            "csrf": csrf_of(page.text), "project": PROJECT, "fix_id": FIXED_THEN_BROKEN, "action": "approve",
            "kind": "gotcha", "subject": "csv delimiter defaults do not hold", "body": "Check tabs too.",
        },
    )  # fmt: skip
    assert done.status_code == 303
    assert FIXED_THEN_BROKEN not in client.get(done.headers["location"]).text.split("</p>", 3)[-1]
    notes = client.get("/ui/review/memory.md", params={"project": PROJECT})
    assert notes.headers["content-disposition"] == 'attachment; filename="memory.md"'
    assert notes.text.startswith("## gotcha: csv delimiter defaults do not hold")
    assert "Check tabs too." in notes.text and f"Promoted from {FIXED_THEN_BROKEN}." in notes.text


def test_an_approved_note_is_written_to_the_configured_workspace(
    ui: Ui, tmp_path: Path, redis_url: str
) -> None:
    workspace = tmp_path / "widgets"
    workspace.mkdir()
    env = {
        "FIXMEM_DATA_DIR": str(ui.api.ctx.settings.data_dir), "FIXMEM_REDIS_URL": redis_url,
        "FIXMEM_OWNER": "alice", "FIXMEM_WORKSPACE": str(workspace), "FIXMEM_PROJECT": PROJECT,
    }  # fmt: skip
    with running_api(env) as api:
        client = httpx.Client(base_url=api.url, follow_redirects=False, timeout=20)
        login(client, ALICE)
        page = client.get("/ui/review", params={"project": PROJECT})
        assert str(workspace / ".fixmem" / "memory.md") in page.text
        form = {"csrf": csrf_of(page.text), "project": PROJECT, "fix_id": FIXED_THEN_BROKEN}
        body = re.search(r'<textarea name="body" rows="5">([^<]*)</textarea>', page.text)
        assert body is not None
        client.post("/ui/review", data={**form, "action": "approve", "kind": "decision", "subject": "s1",
                                         "body": body.group(1).replace("&#39;", "'")})  # fmt: skip
        written = (workspace / ".fixmem" / "memory.md").read_text()
        assert written.startswith("## decision: s1\n") and f"Promoted from {FIXED_THEN_BROKEN}" in written
        assert (
            f'value="{FIXED_THEN_BROKEN}"' not in client.get("/ui/review", params={"project": PROJECT}).text
        )


# -- pipeline ----------------------------------------------------------------------------------------------


def test_replay_and_purge_dead_letters_after_a_confirmation(ui: Ui) -> None:
    client = ui.client(OPS)
    settings = ui.api.ctx.settings
    page = client.get("/ui/pipeline")
    letters = re.findall(r'name="ids" value="(\d+-\d+)"', page.text)
    assert len(letters) == 2 and "processing_failed" in page.text and "invalid_json" in page.text
    assert "fixmem-backfill" in page.text or settings.backfill_stream in page.text
    csrf = csrf_of(page.text)
    asked = client.post(
        "/ui/pipeline/dead-letters", data={"csrf": csrf, "action": "replay", "ids": letters[0]}
    )
    assert "Replay 1 dead letter?" in asked.text and ui.redis.xlen(settings.dead_stream) == 2
    before = ui.redis.xlen(settings.stream)
    done = client.post(
        "/ui/pipeline/dead-letters",
        data={"csrf": csrf, "action": "replay", "ids": letters[0], "confirm": "yes"},
    )
    assert "Replayed 1 dead letter(s)" in client.get(done.headers["location"]).text
    assert ui.redis.xlen(settings.stream) == before + 1
    ((_, fields),) = ui.redis.xrevrange(settings.stream, count=1)
    assert orjson.loads(fields[b"event"]) == VALID_LETTER_TURN
    client.post(
        "/ui/pipeline/dead-letters", data={"csrf": csrf, "action": "purge", "all": "yes", "confirm": "yes"}
    )
    assert ui.redis.xlen(settings.dead_stream) == 0


def test_the_projects_page_follows_every_write_to_a_log(ui: Ui) -> None:
    """Its rows are cached while a log is unchanged: an append, a forget, must show at once."""
    client = ui.client(ALICE)

    def fixes() -> str:
        row = client.get("/ui/projects").text.split(quote(SECOND, safe=""), 1)[1].split("</tr>", 1)[0]
        found = re.search(r'<td class="num">(\d+)</td>', row)
        assert found is not None
        return found.group(1)

    assert fixes() == "1"
    store = ui.api.ctx.store
    store.append("alice", SECOND, [make_entry("alice", SECOND, 4, "tools: a second fix")])
    assert fixes() == "2"
    assert store.forget("alice", entry_id("alice", SECOND, "ev-3"))
    assert fixes() == "1"
    store.append(
        "alice", "github.com/acme/brand-new", [make_entry("alice", "github.com/acme/brand-new", 5, "x")]
    )
    assert "github.com/acme/brand-new" in client.get("/ui/projects").text


@pytest.mark.parametrize("value", ["<b>all of them</b>", "²", "-1", "9" * 40])
def test_the_query_string_cannot_put_words_in_the_pages_notices(ui: Ui, value: str) -> None:
    page = ui.client(ALICE).get("/ui/entries", params={"project": PROJECT, "forgot": value})
    assert page.status_code == 200 and "Forgot" not in page.text
    pipeline = ui.client(OPS).get("/ui/pipeline", params={"done": value})
    assert pipeline.status_code == 200 and 'class="notice"' not in pipeline.text


# -- failed logins -------------------------------------------------------------------------------------


def test_failed_logins_from_one_address_get_429_until_the_window_passes(
    redis_url: str, data_dir: Path
) -> None:
    env = {
        "FIXMEM_DATA_DIR": str(data_dir), "FIXMEM_REDIS_URL": redis_url,
        "FIXMEM_UI_LOGIN_MAX_FAILURES": "3", "FIXMEM_UI_LOGIN_WINDOW_SECONDS": "3600",
    }  # fmt: skip

    def client(address: str) -> httpx.Client:
        transport = httpx.HTTPTransport(local_address=address)  # loopback answers every 127.x address
        return httpx.Client(base_url=api.url, follow_redirects=False, timeout=20, transport=transport)

    with running_api(env) as api:
        guesser = client("127.0.0.1")
        assert [login(guesser, f"guess-{n}").status_code for n in range(3)] == [401, 401, 401]
        refused = login(guesser, ALICE)  # the right token too: the address is refused, not the token
        assert refused.status_code == 429
        assert 3500 < int(refused.headers["retry-after"]) <= 3600
        assert "too many failed logins from your address: try again in" in refused.text
        assert "fixmem_session" not in refused.headers.get("set-cookie", "")

        assert login(client("127.0.0.2"), ALICE).status_code == 303  # another address is not affected

        forgetful = client("127.0.0.3")
        assert [login(forgetful, f"typo-{n}").status_code for n in range(2)] == [401, 401]
        assert login(forgetful, ALICE).status_code == 303  # a login clears the count
        assert [login(forgetful, f"typo-{n}").status_code for n in range(3)] == [401, 401, 401]
        assert login(forgetful, ALICE).status_code == 429
