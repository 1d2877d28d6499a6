"""``python -m fixmem``: the same as the ``fixmem`` command."""

from __future__ import annotations

import sys

from fixmem.cli import main

sys.exit(main())
