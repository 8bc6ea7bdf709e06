"""Telling a real cancellation from an exception that merely looks like one.

An agent or a check may raise `asyncio.CancelledError` (or `KeyboardInterrupt`,
`SystemExit`) itself. Treated as a cancellation, that would end the whole run "green"
with its unfinished cases gone; it is an error of that sample instead. Only a
cancellation that the task really received (a timeout, `cancel()`, Ctrl+C) cancels.
"""

from __future__ import annotations

import asyncio

import anyio


def cancelled_from_outside(exc: BaseException) -> bool:
    """Whether `exc` is a cancellation the current task really received.

    Under asyncio the task counts the cancellations requested of it; under trio only
    trio raises `Cancelled`. Anything else (`KeyboardInterrupt`, `SystemExit`, a
    `CancelledError` raised by user code) is an error of whatever raised it.
    """
    cancelled = anyio.get_cancelled_exc_class()
    if not isinstance(exc, cancelled):
        return False
    if cancelled is not asyncio.CancelledError:
        return True
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
