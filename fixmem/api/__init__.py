"""The HTTP API: ``app`` (the routes, ``create_app``), ``context`` (what the routes and the web UI share),
``auth`` (bearer tokens), ``models`` (the JSON bodies), ``server`` (wiring: ``build_context``; uvicorn
around the API and the web UI)."""
