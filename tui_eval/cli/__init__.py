"""The `tui-eval` command: the parser (`commands`), one module per family of commands, what
a headless run prints and writes, and the exit codes.

A front-end: runs suites through `service`; the only module that imports the app, lazily."""

from tui_eval.cli.commands import main

__all__ = ["main"]
