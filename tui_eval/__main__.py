"""`python -m tui_eval`: the same as the `tui-eval` command."""

from tui_eval.cli.commands import main

raise SystemExit(main())
