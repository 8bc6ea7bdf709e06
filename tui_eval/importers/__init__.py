"""`tui-eval import KIND FILE -o SUITE.yaml`: suites from other tools' data.

Kinds: `otel` (recorded OTLP JSON traces, see `tui_eval.suites.recorded`),
`pydantic-evals` (a pydantic-evals dataset YAML/JSON) and `inspect` (an Inspect dataset in
JSON lines, JSON or CSV, or an eval log; `inspect_files` reads them). Whatever a source holds
that has no tui-eval form is listed — on stderr and as comments at the top of the written
suite — never silently dropped; a source that cannot be imported raises
`writing.ImportSourceError`, naming the file and the place.
"""

from __future__ import annotations

KINDS = ("otel", "pydantic-evals", "inspect")
"""What `tui-eval import` reads (the command itself: `tui_eval.cli.imports`)."""
