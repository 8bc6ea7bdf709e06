"""The CLI's exit codes, and the one table that maps an exception to its code."""

from __future__ import annotations

from tui_eval.util.errors import TuiEvalError

EXIT_OK = 0
"""Every case passed and nothing regressed."""
EXIT_FAILED = 1
"""A case failed, a case regressed, or the run was interrupted."""
EXIT_USAGE = 2
"""Bad usage, a suite or file that could not be loaded, or a corrupt baseline."""
EXIT_NOTHING_TO_RESUME = 3
"""`tui-eval resume` found no interrupted run (nothing ran)."""
EXIT_NOTHING_RAN = 5
"""No case ran: the filter selected none, or every suite was skipped (pytest's 5, "no tests
collected"). The reports asked for are written, empty. A shard whose share of a non-empty
selection is empty is not this: it exits 0 with an empty report for `tui-eval merge`."""

EXIT_CODES: dict[type[BaseException], int] = {
    KeyboardInterrupt: EXIT_FAILED,  # an interrupted run
    BrokenPipeError: EXIT_FAILED,  # the reader of stdout left: the run was cut short
    TuiEvalError: EXIT_USAGE,  # a file, suite, request or journal that cannot be used
    Exception: EXIT_USAGE,  # anything else: a one-line message (the traceback with --debug)
}
"""Each exception the CLI stops on, by class (the nearest in its MRO wins): the one place
the CLI maps errors to exit codes."""


def exit_code_for(exc: BaseException) -> int:
    """The exit code of a command stopped by `exc` (`EXIT_CODES`)."""
    return next((EXIT_CODES[cls] for cls in type(exc).__mro__ if cls in EXIT_CODES), EXIT_FAILED)
