"""What an evaluation is made of: a `Case`, the plan the runner derives from it, and the
results a run produces sample by sample and case by case.

`cases` (`Case`), `case_plan` (what the runner works out once per case), `results`
(`SampleResult`, `CaseResult`). May import `agents`, `checks`, `stats` and `util`; never the
engine (`run`), reports, services or front-ends.
"""
