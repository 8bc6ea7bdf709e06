"""Helpers every other package uses, knowing nothing of agents, cases or runs: text from
untrusted values (`text`), secrets (`secrets`), atomic writes (`atomic`), the data folder
(`home`), real cancellations (`cancellation`), safe YAML (`yaml_files`). The bottom layer.
"""
