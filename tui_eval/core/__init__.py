"""What an evaluation is made of and how it runs: `Case`, its plan, results, `RunSettings`
and the `CostBudget`. May import `checks`, `agents`, `stats` and `util`; never the engine
(`run`), reports, suites, services or front-ends."""
