"""Suite runs as the CLI and the app start them: `SuiteRun` (start, journal, resume, finish),
run plans (what a run selects and how it is configured), the run store (history and
journals on disk), and the options a run was asked for.

The one way front-ends reach the engine: may import `run`, `calibration`, `importers` and
everything below; never the CLI or the app.
"""
