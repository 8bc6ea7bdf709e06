"""The layer every model call of a run goes through (`transport.py`), over aiohttp's or
httpx2's sockets (`sockets.py`): the built-in providers' and, through
`tui_eval.http_client()`, any SDK's. No HTTP protocol code is tui-eval's own."""
