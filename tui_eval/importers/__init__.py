"""`tui-eval import KIND FILE -o SUITE.yaml`: suites from OTLP traces (`otel`), pydantic-evals
datasets and Inspect datasets or eval logs. What has no tui-eval form is listed on stderr and
atop the written suite, never silently dropped.
"""

from __future__ import annotations

KINDS = ("otel", "pydantic-evals", "inspect")
"""What `tui-eval import` reads (the command itself: `tui_eval.cli.imports`)."""
