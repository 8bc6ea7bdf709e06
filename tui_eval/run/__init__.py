"""The engine: how cases are run against an agent.

`runner` (`evaluate`, `evaluate_iter`, `recheck`), `evaluation` (one run: its results,
budget, cancellation, events and scheduling), `sample_runner` and `sample_sources` (where
samples come from and how one is run), `events` (what a run emits) and `state` (`RunState`,
the one fold of those events that every front-end shows), `sequential` (`decide`,
`compare_agents`), the Ray executor and its worker, and the seed-000 evaluators. May import
`report`, `suites`, `core`, `checks`, `agents`, `stats` and `util`; never the services, the
CLI or the app.
"""
