"""The CLI's exit codes, shared by the entry point and the headless commands."""

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
