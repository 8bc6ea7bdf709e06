"""Suites: named sets of cases with their agent, from Python, YAML or JSONL files."""

from tui_eval.suites.declarative import SuiteFileError, json_schema
from tui_eval.suites.discovery import LoadError, LoadResult, find_suite_files, load_suites
from tui_eval.suites.suite import Suite

__all__ = [
    "LoadError",
    "LoadResult",
    "Suite",
    "SuiteFileError",
    "find_suite_files",
    "json_schema",
    "load_suites",
]
