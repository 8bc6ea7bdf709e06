"""Telling a real cancellation from a look-alike: an agent raising `CancelledError` itself
must fail its sample, not end the whole run "green"."""

from __future__ import annotations

import asyncio

import anyio


def cancelled_from_outside(exc: BaseException) -> bool:
    """Whether `exc` is a cancellation the current task really received."""
    cancelled = anyio.get_cancelled_exc_class()
    if not isinstance(exc, cancelled):
        return False
    if cancelled is not asyncio.CancelledError:
        return True
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
