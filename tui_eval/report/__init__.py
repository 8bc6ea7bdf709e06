"""Reports and what is done with them: `Report`, its stored form, `Diff` against a baseline,
where two samples part ways, exports for CI, baseline files, the baseline policy and its
review (accept, reject, skip), the CI gate, and the samples left out of the verdicts (the
user simulator's fault: `left_out`, the rule and the words every summary uses).

May import `core`, `checks`, `agents`, `stats` and `util`; never the engine (`run`), the
services, the CLI or the app.
"""
