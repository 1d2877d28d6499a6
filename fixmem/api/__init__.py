"""The HTTP API: ``create_app`` (routes), ``build_context`` (wiring), ``serve`` (uvicorn)."""

from fixmem.api.app import ApiContext, create_app
from fixmem.api.auth import TokenConfigError, TokenMap, load_tokens, parse_tokens

__all__ = ["ApiContext", "TokenConfigError", "TokenMap", "create_app", "load_tokens", "parse_tokens"]
