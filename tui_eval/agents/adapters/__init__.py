"""Adapters that let agents built with other frameworks run under tui-eval."""
