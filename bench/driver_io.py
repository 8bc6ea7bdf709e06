"""What every benchmark driver shares, whichever framework's virtualenv runs it: a timer,
and the one JSON line the orchestrating script reads."""

from __future__ import annotations

import json
import resource
import time
from typing import Any


def emit(**fields: Any) -> None:
    """Print `fields` and the process's peak RSS as one JSON line."""
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({**fields, "rss_mb": rss_mb}))


class Timer:
    """Wall and CPU seconds of a `with` block."""

    def __enter__(self) -> Timer:
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.start
        self.cpu = time.process_time() - self.cpu_start
