"""The engine: how cases are run against an agent.

`settings` (`RunSettings`, the one description of how a run runs), `runner` (`evaluate`,
`evaluate_iter`, `recheck`), `evaluation` (one run's state), `scheduling`, `sample_runner`
and `sample_sources` (where samples come from and how one is run), `budget` (`max_cost`),
`events` (what a run emits), `sequential` (`decide`, `compare_agents`), the Ray executor and
its worker, and the seed-000 evaluators. May import `suites`, `report`, `core`, `checks`,
`agents`, `stats` and `util`; never the services, the CLI or the app.
"""
