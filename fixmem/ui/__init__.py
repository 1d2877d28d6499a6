"""The web UI at ``/ui``: a person's view of their fix memory, served by ``fixmem serve`` and ``fixmem up``.

Pages (server-rendered HTML, no script, every asset shipped in this package):

- ``/ui/login``: a token (``FIXMEM_API_TOKENS`` or ``FIXMEM_API_OPS_TOKENS``) starts a session
  (``fixmem.ui.session``); every page also takes ``Authorization: Bearer <token>``.
- ``/ui/projects``: the owner's projects with counts, outcome ratios over time (an SVG chart), activity.
- ``/ui/entries?project=<key>``: the entries table (filters, paging); ``/ui/entry/<id>?project=<key>``.
- ``/ui/forget`` (POST): forget one or many entries, after a confirmation.
- ``/ui/search``: a task (and files, an error) -> the prompt block the agent would get, scores, reasons.
- ``/ui/review?project=<key>``: suggested notes to approve, edit or reject (``store.notes.review``).
- ``/ui/impact``: does the memory help? Sessions with fix recall against the holdback arm, the lift.
- ``/ui/pipeline``: streams, queues, workers, dead letters, replay and purge: operators only.

Modules: ``web`` (templates, viewer, CSRF, errors, login), ``pages`` (the owner's pages),
``review_pages``, ``impact_page``, ``ops`` (pipeline), ``summary`` (the projects page's rows), ``limit``
(failed logins);
pure helpers ``listing`` (an entry's extra fields; filters and paging are ``store.listing``) and
``chart`` (SVG).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fastapi import FastAPI

    from fixmem.api.context import ApiContext


def mount(app: FastAPI, ctx: ApiContext) -> None:
    """Serve the web UI from ``app`` (whose ``state.ctx`` is ``ctx``).

    Raises TokenConfigError for a malformed ``FIXMEM_API_OPS_TOKENS``.
    """
    from fixmem.ui import impact_page, ops, pages, review_pages, web  # noqa: PLC0415 - jinja2 when serving

    app.state.ui = web.build_state(ctx)
    for module in (web, pages, review_pages, impact_page, ops):
        app.include_router(module.router)
    app.add_exception_handler(web.UiError, web.ui_error)
    app.add_exception_handler(web.LoginNeeded, web.login_needed)
    app.middleware("http")(web.server_timing)
