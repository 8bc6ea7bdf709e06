"""How each screen looks, from frozen demo data (no clock, no randomness on screen)."""

from __future__ import annotations

import shutil
from pathlib import Path

import anyio
import pytest

from tests.tui.scenes import SCENES, build_scene

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def pristine_suites(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled suites as they are in git: what a user did in `suites/` (saved
    baselines, labels, logs) never reaches a snapshot."""
    folder = tmp_path_factory.mktemp("repo") / "suites"
    shutil.copytree(
        REPO / "suites",
        folder,
        ignore=shutil.ignore_patterns("__baselines__", "__labels__", "__pycache__", "*.log"),
    )
    return folder


@pytest.mark.parametrize("scene", SCENES)
def test_screen_snapshot(scene, snap_compare, tmp_path, pristine_suites, monkeypatch):
    # Scenes show paths relative to the working folder ("suites/…"): work beside the copy.
    monkeypatch.chdir(pristine_suites.parent)
    app, setup, keys = anyio.run(build_scene, scene, pristine_suites, tmp_path)
    assert snap_compare(app, press=keys, terminal_size=(120, 40), run_before=setup)


@pytest.mark.parametrize(
    "scene", ["suites", "run_done", "diff", "history", "sample_judge", "conversation"]
)
def test_screen_snapshot_at_80x24(scene, snap_compare, tmp_path, pristine_suites, monkeypatch):
    monkeypatch.chdir(pristine_suites.parent)
    app, setup, keys = anyio.run(build_scene, scene, pristine_suites, tmp_path)
    assert snap_compare(app, press=keys, terminal_size=(80, 24), run_before=setup)
