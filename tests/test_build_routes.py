"""The source-build routes a cluster user takes (README "Building from source"), each built for real.

- a pure-Python install (``-Dnative=false``) on a machine without a C compiler: it builds, imports the python
  twin, and ``accel --version`` / ``accel bench`` work;
- a native build without a C compiler: it stops with a message that names ``-Dnative=false``;
- a checkout that must stay untouched (read-only): ``build-dir`` outside it, and nothing is written into it.

The builds use the build tools of this environment (``--no-build-isolation``: meson-python, meson, ninja,
Cython, numpy — the ``test`` extra lists them) and install into a scratch directory (``--target``), never into
the environment under test.  They run the ``--config-settings=`` spelling, which Debian 12's pip 23.0 accepts.
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.skipif(not (REPO / "meson.build").exists(), reason="no source checkout next to the tests (sdist "
                       "or wheel tests): nothing to build"),
]


def _checkout_copy(dst):
    """The tracked files of the checkout (what an sdist or a fresh clone holds), copied to dst."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for rel in filter(None, files.decode().split("\0")):
        src = REPO / rel
        if src.is_file():
            out = dst / rel
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out)
    return dst


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("the checkout is not a git work tree (its tracked files cannot be listed)")
    for mod in ("mesonpy", "Cython", "numpy"):
        try:
            __import__(mod)
        except ImportError:
            pytest.fail(f"{mod} is missing: the test extra (pip install '.[test]') installs the build tools")
    return _checkout_copy(tmp_path_factory.mktemp("src"))


@pytest.fixture(scope="module")
def no_compiler_env(tmp_path_factory):
    """PATH and CC such that no C compiler can be found (cc, gcc, clang... are `false`)."""
    fake = tmp_path_factory.mktemp("nocc")
    for name in ("cc", "gcc", "c++", "g++", "clang", "clang++", "icx", "icc"):
        (fake / name).symlink_to(shutil.which("false") or "/bin/false")
    env = dict(os.environ)
    env.update(PATH=f"{fake}{os.pathsep}{env.get('PATH', '')}", CC=str(fake / "cc"), CXX=str(fake / "c++"))
    env.pop("PYTHONPATH", None)
    return env


def _pip_install(src, target, env, *settings):
    cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
           "--disable-pip-version-check", "--target", str(target)]
    cmd += [f"--config-settings={s}" for s in settings]
    return subprocess.run(cmd + [str(src)], capture_output=True, text=True, env=env, timeout=900)


def _run_accel(target, env, *args):
    env = dict(env, PYTHONPATH=str(target))
    env.pop("ACCEL_CUDART", None)
    return subprocess.run([sys.executable, "-m", "accel", *args], capture_output=True, text=True, env=env,
                          cwd=target, timeout=600)


def test_pure_python_install_needs_no_compiler(source, no_compiler_env, tmp_path):
    target = tmp_path / "site"
    r = _pip_install(source, target, no_compiler_env, "setup-args=-Dnative=false",
                     f"build-dir={tmp_path / 'build'}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not list((target / "accel").rglob("*.so")), "a -Dnative=false install must compile nothing"
    v = _run_accel(target, no_compiler_env, "--version")
    assert v.returncode == 0 and v.stdout.startswith("accel ") and "backend python" in v.stdout, v.stdout + v.stderr
    b = _run_accel(target, no_compiler_env, "bench")
    assert b.returncode == 0, b.stdout + b.stderr
    assert "Traceback" not in b.stderr
    lines = b.stdout.splitlines()
    assert any(ln.startswith("twins: python only") for ln in lines), b.stdout
    for op in ("Node(op, 2 operands, 1 shape)", "post_order, per node", "graph_hash, per node"):
        rows = [ln for ln in lines if ln.startswith(op + " ")]
        assert [ln.split()[-3] for ln in rows] == ["python"], (op, b.stdout)


def test_native_build_without_compiler_names_the_option(source, no_compiler_env, tmp_path):
    r = _pip_install(source, tmp_path / "site", no_compiler_env, f"build-dir={tmp_path / 'build'}")
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "no C compiler found" in out and "-Dnative=false" in out, out


def test_build_dir_outside_a_read_only_checkout_writes_nothing_into_it(source, no_compiler_env, tmp_path):
    """A read-only checkout builds with ``build-dir`` outside it (meson-python's default build directory is
    inside the source tree).  Checked as "nothing written into the tree", which holds for root too."""
    before = sorted(p.relative_to(source) for p in source.rglob("*"))
    modes = {p: p.stat().st_mode for p in [source, *source.rglob("*")]}
    for p in modes:
        p.chmod(modes[p] & ~0o222)
    try:
        r = _pip_install(source, tmp_path / "site", no_compiler_env, "setup-args=-Dnative=false",
                         f"build-dir={tmp_path / 'build'}")
    finally:
        for p, mode in modes.items():
            p.chmod(mode)
    assert r.returncode == 0, r.stdout + r.stderr
    assert sorted(p.relative_to(source) for p in source.rglob("*")) == before
