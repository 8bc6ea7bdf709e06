"""Telling a real cancellation from an exception that merely looks like one: an agent that
raises `CancelledError` itself must fail its sample, not end the whole run "green".
"""

from __future__ import annotations

import asyncio

import anyio


def cancelled_from_outside(exc: BaseException) -> bool:
    """Whether `exc` is a cancellation the current task really received (under asyncio, the
    task counts those requested of it); anything else is an error of whatever raised it."""
    cancelled = anyio.get_cancelled_exc_class()
    if not isinstance(exc, cancelled):
        return False
    if cancelled is not asyncio.CancelledError:
        return True
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
