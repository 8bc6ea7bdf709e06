"""Suite runs as the CLI and the app start them: `SuiteRun` (start, journal, resume,
finish), the `RunRequest` a front-end makes (a kind of run, a selection, settings), run
plans, the run store (history and journals on disk), `RunSession` (a run with its live
`RunState`), `SuiteSet` (loaded suites reloaded after edits; the watch modes) and the
Diff's decisions.

The one way front-ends reach the engine: may import `run`, `calibration`, `importers` and
everything below; never the CLI or the app.
"""
