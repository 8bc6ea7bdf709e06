"""The `tui-eval` command: the entry point and argument parsing (`commands`), one module per
family of commands (`headless` for run/ab/recheck/resume, `report_commands`, `calibrate`),
what a headless run prints and writes (`outcomes`, `progress`), and the exit codes.

A front-end: goes through `service` for suite runs and never imports the engine's
internals; the only module that imports the app (`tui`), lazily, when a command opens it.
"""

from tui_eval.cli.commands import main

__all__ = ["main"]
