"""The engine: how cases are run against an agent (`evaluate`, `decide`, events, `RunState`,
the Ray executor, the evaluator-style API).

May import `report`, `suites`, `core`, `checks`, `agents`, `stats` and `util`; never the
services, the CLI or the app."""
