"""How each screen looks, from frozen demo data (no clock, no randomness on screen)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.tui.scenes import SCENES, build_scene

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("scene", SCENES)
def test_screen_snapshot(scene, snap_compare, tmp_path):
    app, setup, keys = anyio.run(build_scene, scene, REPO / "suites", tmp_path)
    assert snap_compare(app, press=keys, terminal_size=(120, 40), run_before=setup)


@pytest.mark.parametrize("scene", ["suites", "run_done", "diff", "history", "sample_judge"])
def test_screen_snapshot_at_80x24(scene, snap_compare, tmp_path):
    app, setup, keys = anyio.run(build_scene, scene, REPO / "suites", tmp_path)
    assert snap_compare(app, press=keys, terminal_size=(80, 24), run_before=setup)
