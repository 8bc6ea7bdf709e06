"""The Textual app. Nothing outside this package imports it (the library stays headless)."""
