"""Failed logins per client address: after ``max_failures`` in ``window_seconds``, refuse for a while.

In memory, per server process (a restart forgets): the login form is the one place a stranger can try
tokens against the UI, and a token is the whole credential. A client with ``max_failures`` failed logins
within the last ``window_seconds`` is refused (429, ``Retry-After``) until the oldest of them is older
than the window, whatever token it sends; a successful login clears its count. Clients are told apart
by the connection's address only (a forwarded-for header can be forged): behind a reverse proxy every
client shares the proxy's address, and so its limit. At most ``max_clients`` addresses are tracked; past
that the ones whose failures are all outside the window go first, then the least recently failing.
The clock is passed in.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Final

MAX_CLIENTS: Final = 10_000


class LoginLimiter:
    """Counts failed logins per client address in a sliding window."""

    def __init__(
        self,
        max_failures: int,
        window_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        """Raises ValueError when ``max_failures`` < 1 or ``window_seconds`` <= 0."""
        if max_failures < 1 or window_seconds <= 0:
            raise ValueError("max_failures must be >= 1 and window_seconds > 0")
        self.max_failures = max_failures
        self.window = window_seconds
        self._clock = clock
        self._max_clients = max_clients
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._mutex = threading.Lock()

    def _recent(self, client: str, now: float) -> deque[float] | None:
        times = self._failures.get(client)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self._failures[client]
            return None
        return times

    def retry_after(self, client: str) -> int | None:
        """Whole seconds until ``client`` may try again; None when it may now."""
        with self._mutex:
            now = self._clock()
            times = self._recent(client, now)
            if times is None or len(times) < self.max_failures:
                return None
            return max(1, math.ceil(times[-self.max_failures] + self.window - now))

    def failed(self, client: str) -> None:
        """Count a failed login of ``client``."""
        with self._mutex:
            now = self._clock()
            times = self._recent(client, now) or deque(maxlen=self.max_failures)
            times.append(now)
            self._failures[client] = times
            self._failures.move_to_end(client)
            if len(self._failures) > self._max_clients:
                for other in list(self._failures):
                    self._recent(other, now)
                while len(self._failures) > self._max_clients:
                    self._failures.popitem(last=False)

    def succeeded(self, client: str) -> None:
        """Forget ``client``'s failures (it knows a token)."""
        with self._mutex:
            self._failures.pop(client, None)

    def __len__(self) -> int:
        with self._mutex:
            return len(self._failures)
