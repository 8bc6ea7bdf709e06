"""What an evaluation is made of and how it runs: a `Case`, the plan the runner derives
from it, the results a run produces sample by sample and case by case, `RunSettings` (the
one description of how a run runs: each setting's type, default and validator) and the
`CostBudget` that enforces `max_cost`.

`cases`, `case_plan`, `results`, `settings`, `budget`. May import `checks`, `agents`,
`stats` and `util`; never the engine (`run`), reports, suites, services or front-ends.
"""
