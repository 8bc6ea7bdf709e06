"""Small helpers every other package uses, knowing nothing of agents, cases or runs.

Text from untrusted values (`text`), keeping secrets out of what is written or shown
(`secrets`), atomic file writes (`atomic`), where tui-eval keeps its state (`home`),
telling a real cancellation from a look-alike (`cancellation`), and YAML read with alias
bombs refused (`yaml_files`). Imports only the standard library and third-party packages:
it is the bottom layer.
"""
