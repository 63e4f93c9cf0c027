"""The documentation site (docs/, mkdocs.yml): its API reference is generated from the docstrings and must be
current, and the site builds with warnings as errors (broken links, missing pages)."""
import filecmp
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(not (REPO / "mkdocs.yml").exists(), reason="no checkout next to the tests")


def test_api_reference_is_generated_from_the_code(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "ACCEL_BACKEND"}
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_api_docs.py"), str(tmp_path)], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    committed = REPO / "docs" / "api"
    names = sorted(p.name for p in tmp_path.glob("*.md"))
    assert names == sorted(p.name for p in committed.glob("*.md"))
    stale = [n for n in names if not filecmp.cmp(tmp_path / n, committed / n, shallow=False)]
    assert not stale, (f"docs/api is out of date for {stale}: run `python tools/gen_api_docs.py docs/api` "
                       "from the checkout's root")


def test_docs_site_builds_strict(tmp_path):
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.fail("mkdocs is missing: the test extra (pip install '.[test]') installs it")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "site" / "api" / "cuda" / "index.html").exists()
