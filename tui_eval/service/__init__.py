"""Suite runs as the CLI and the app start them: `SuiteRun`, `RunRequest`, run plans, the
run store, `RunSession`, `SuiteSet` and the Diff's decisions.

The one way front-ends reach the engine: may import `run`, `calibration`, `importers` and
everything below; never the CLI or the app."""
