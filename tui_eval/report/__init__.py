"""Reports and what is done with them: `Report`, its stored form, `Diff` against a baseline,
where two samples part ways, exports for CI, baseline files, the baseline policy and its
review (accept, reject, skip), and the CI gate.

May import `core`, `checks`, `agents`, `stats` and `util`; never the engine (`run`), the
services, the CLI or the app.
"""
