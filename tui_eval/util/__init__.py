"""Helpers every package uses, knowing nothing of agents, cases or runs: untrusted `text`,
`secrets`, `atomic` writes, the data folder (`home`), real `cancellation`s, safe YAML
(`yaml_files`), `errors`. The bottom layer: imports no other tui-eval package."""
