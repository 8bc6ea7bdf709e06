"""`TuiEvalError`: the one base of every exception tui-eval defines (`isinstance(exc,
TuiEvalError)` tells ours from an SDK's). A class that replaced a builtin's or a library's
error derives from that one too, so `except ValueError` in users' code keeps working.
"""

from __future__ import annotations


class TuiEvalError(Exception):
    """The base of every exception tui-eval defines (`tui-eval`'s exit code for each:
    `tui_eval.cli.exit_codes`)."""
