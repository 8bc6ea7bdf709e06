"""Reports and what is done with them: `Report` and its file, `Diff` against a baseline,
where two samples part ways, CI exports and gate, the baseline store and its review, failure
modes, quarantine, and the samples left out of the verdicts (`left_out`).

May import `core`, `checks`, `agents`, `stats` and `util`; never the engine (`run`), the
services, the CLI or the app.
"""
