"""How long `v` (the full output) takes to open on a huge output, and to answer keys.

    python bench/workloads/full_text_run.py [MB]

Opens the Full output screen on an MB-sized text (default 10) in a headless app and prints
the seconds from pushing the screen to its first frame, then the seconds a page-down,
a jump to the end and a search for the last word take.
"""

from __future__ import annotations

import sys
import time

import anyio


async def main(megabytes: float) -> None:
    from tui_eval.tui.app import make_app
    from tui_eval.tui.screens.full_text import FullTextScreen

    words = "the quick brown fox jumps over the lazy dog "
    text = (words * int(megabytes * 1_000_000 / len(words) + 1))[: int(megabytes * 1_000_000)]
    text = text[:-6] + "NEEDLE"
    app = make_app(suites=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        start = time.perf_counter()
        await app.push_screen(FullTextScreen(text))
        await pilot.pause()
        opened = time.perf_counter() - start
        timings = {}
        for label, keys in (
            ("page down", ["pagedown"]),
            ("end", ["end"]),
            ("search", ["slash", *"NEEDLE", "enter"]),
        ):
            start = time.perf_counter()
            await pilot.press(*keys)
            await pilot.pause()
            timings[label] = time.perf_counter() - start
    parts = " · ".join(f"{k} {v * 1000:.0f} ms" for k, v in timings.items())
    print(f"{megabytes:g} MB: opened in {opened:.3f} s · {parts}")


anyio.run(main, float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
