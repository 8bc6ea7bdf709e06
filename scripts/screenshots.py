"""Regenerate screenshots/*.svg: every screen of the app, from deterministic demo data.

python scripts/screenshots.py            # 120×40
python scripts/screenshots.py --size 80x24 suites run_done diff history   # *_80x24.svg
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the scenes live with the snapshot tests


async def capture(name: str, size: tuple[int, int], out: Path) -> Path:
    from tests.tui.scenes import build_scene

    with tempfile.TemporaryDirectory() as home:
        os.environ["TUI_EVAL_HOME"] = home
        app, setup, keys = await build_scene(name, ROOT / "suites", Path(home))
        async with app.run_test(size=size) as pilot:
            await setup(pilot)
            if keys:
                await pilot.press(*keys)
            await pilot.pause(0.3)
            suffix = "" if size == (120, 40) else f"_{size[0]}x{size[1]}"
            target = out / f"{name}{suffix}.svg"
            app.save_screenshot(filename=target.name, path=str(out))
    return target


def main() -> None:
    from tests.tui.scenes import SCENES

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--size", default="120x40", help="terminal size, WIDTHxHEIGHT")
    parser.add_argument("--out", default=str(ROOT / "screenshots"))
    parser.add_argument("scenes", nargs="*", default=list(SCENES))
    args = parser.parse_args()
    width, height = (int(x) for x in args.size.split("x"))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.scenes:
        print(asyncio.run(capture(name, (width, height), out)))


if __name__ == "__main__":
    main()
