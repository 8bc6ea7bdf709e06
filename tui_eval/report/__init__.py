"""Reports and what is done with them: `Report`, `Diff`, CI exports and gate, baselines,
failure modes, quarantine.

May import `core`, `checks`, `agents`, `stats` and `util`; never the engine (`run`), the
services, the CLI or the app."""
