"""The source-build routes a cluster user takes (README "Building from source"), each built for real.

- a pure-Python install (``-Dnative=false``) on a machine without a C compiler: it builds, imports the python
  twin, and ``accel --version`` / ``accel bench`` work;
- a native build without a C compiler: it stops with a message that names ``-Dnative=false``;
- a checkout that must stay untouched (read-only): ``build-dir`` outside it, and nothing is written into it;
- an editable install (``pip install --no-build-isolation -e .``): the suite runs on it, and an edit of the
  checkout is what the next import sees, rebuilt by meson-python's loader.

The builds use the build tools of this environment (``--no-build-isolation``: meson-python, meson, ninja,
Cython, numpy — the ``test`` extra lists them) and install into a scratch directory (``--target``), never into
the environment under test.  They run the ``--config-settings=`` spelling, which Debian 12's pip 23.0 accepts.
"""
import os
import pathlib
import re
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
    """``python -m accel ARGS`` on the build in ``target``, with this environment's packages after it (numpy);
    -S: no .pth of site-packages runs (an editable install's loader would take precedence over PYTHONPATH)."""
    import numpy
    env = dict(env, PYTHONPATH=os.pathsep.join([str(target), os.path.dirname(os.path.dirname(numpy.__file__))]))
    env.pop("ACCEL_CUDART", None)
    return subprocess.run([sys.executable, "-S", "-m", "accel", *args], capture_output=True, text=True, env=env,
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


def test_editable_install_runs_the_suite_and_rebuilds_on_import(source, no_compiler_env, tmp_path):
    """``pip install --no-build-isolation -e .`` in a venv of its own (this environment's packages reachable
    through a .pth: pip, pytest, numpy and the build tools), pure-Python so that it is quick: the suite's
    guard takes it for the installed build it is (it refused it as "imported from the source tree"), its
    tests run, and a change to meson.build (the version) is rebuilt on the next import."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    # what this process imports from (not the checkout): pip, pytest, numpy, the build tools
    outer = [p for p in sys.path if p and os.path.isdir(p) and pathlib.Path(p).resolve() != REPO.resolve()]
    pathlib.Path(site, "zz_outer_environment.pth").write_text("\n".join(outer) + "\n")
    env = dict(no_compiler_env, PATH=f"{venv / 'bin'}{os.pathsep}{no_compiler_env['PATH']}")
    build = tmp_path / "build"
    r = subprocess.run([str(python), "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                        "--disable-pip-version-check", "-e", str(source), "--config-settings=setup-args=-Dnative=false",
                        f"--config-settings=build-dir={build}"], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    # pytest as the README runs it, from the checkout's root (a runner outside it: nothing puts the root on sys.path)
    runner = tmp_path / "run_pytest.py"
    runner.write_text("import sys, pytest\nsys.exit(pytest.main())\n")
    tests = ["tests/test_foundation.py::test_backend_is_reported", "tests/test_foundation.py::test_version_is_declared_once",
             "tests/test_types.py::test_package_is_typed", "tests/test_lazy_ir.py"]
    t = subprocess.run([str(python), str(runner), "-q", "-p", "no:randomly", *tests], cwd=source, env=env,
                       capture_output=True, text=True, timeout=900)
    assert t.returncode == 0, t.stdout + t.stderr
    assert re.search(r"\d+ passed", t.stdout) and "accel test guard" not in t.stdout + t.stderr, t.stdout
    where = subprocess.run([str(python), "-c", "import accel; print(accel.__file__)"], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=300)
    assert where.stdout.strip() == str(source / "accel" / "__init__.py"), where.stdout + where.stderr
    # an edit of the checkout: the editable loader rebuilds (meson reconfigures) on the next import
    meson_build = source / "meson.build"
    text = meson_build.read_text()
    version = re.search(r"version: '([^']+)'", text).group(1)
    meson_build.write_text(text.replace(f"version: '{version}'", f"version: '{version}.post1'", 1))
    try:
        v = subprocess.run([str(venv / "bin" / "accel"), "--version"], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    finally:
        meson_build.write_text(text)
    assert v.returncode == 0 and v.stdout.startswith(f"accel {version}.post1"), v.stdout + v.stderr


@pytest.mark.skipif(not (REPO / ".ci" / "run").exists() or shutil.which("bash") is None, reason="no CI script")
def test_ci_finds_the_other_cpythons_of_requires_python():
    """.ci/run builds and imports on every other CPython of requires-python it finds (uv's, pyenv's, python3.X
    on PATH): each it lists runs and is the version it is listed as; pyenv's shims of unselected versions
    (which fail) are not listed."""
    proc = subprocess.run(["bash", str(REPO / ".ci" / "run"), "--list-cpythons"], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    oldest = int(re.search(r'requires-python = ">=3\.(\d+)"', (REPO / "pyproject.toml").read_text()).group(1))
    this = subprocess.run(["python3", "-c", "import sys; print(sys.version_info[1])"], capture_output=True,
                          text=True).stdout.strip()
    seen = []
    for line in proc.stdout.splitlines():
        version, python = line.split(" ", 1)
        minor = int(version.split(".")[1])
        assert minor >= oldest and str(minor) != this and version not in seen, line
        got = subprocess.run([python, "-c", "import sys; print(sys.implementation.name, *sys.version_info[:2])"],
                             capture_output=True, text=True, timeout=60).stdout.split()
        assert got == ["cpython", "3", str(minor)], (line, got)
        seen.append(version)
