"""``python -m bench``: run the whole benchmark suite (see ``bench.suite``)."""

from __future__ import annotations

import sys

from bench.suite import main

sys.exit(main())
