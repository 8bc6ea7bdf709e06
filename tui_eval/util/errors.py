"""`TuiEvalError`, the base of tui-eval's exceptions; one that replaced a builtin's or a
library's error derives from that too, so users' `except ValueError` keeps working."""

from __future__ import annotations


class TuiEvalError(Exception):
    """The base of every exception tui-eval defines (exit codes: `tui_eval.cli.exit_codes`)."""
