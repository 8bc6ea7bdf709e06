"""`TuiEvalError`: the one base of every exception tui-eval defines.

`except TuiEvalError` catches any error of tui-eval's own, and `isinstance(exc,
TuiEvalError)` is how code tells ours from an SDK's. A class that replaced a builtin or a
library's error (a `ValueError`, httpx2's `TransportError`) derives from that one too, so
`except ValueError` in users' code keeps working.
"""

from __future__ import annotations


class TuiEvalError(Exception):
    """The base of every exception tui-eval defines (`tui-eval`'s exit code for each:
    `tui_eval.cli.exit_codes`)."""
