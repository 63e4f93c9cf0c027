"""The README and the documentation (docs/*.md, CONTRIBUTING.md) as a newcomer without a GPU reads them, and
the command line they teach (issues 23, 35).

Every command a document gives (fenced, or inline in backticks) is either run by .ci/run (the README's fenced
"Install and run" and "Tests" commands, verbatim, from the clone's root) or run here, from the checkout's
root where a newcomer types it. A command added to a document without a check fails
test_every_command_is_checked. Every ```python block of every document runs here, imports included, on the
emulated runtime (```py marks a block whose consumers need other libraries: docs/memory.md's, run by
tests/test_device_array.py::test_readme_hand_off_section). `python -m accel` typed in the checkout's root must
run the installed build (accel/_checkout.py); what cannot work says what to type instead.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

import accel

REPO = pathlib.Path(__file__).resolve().parent.parent
README = REPO / "README.md"
# the documents whose commands and examples are checked: the README, the guide pages (the API reference is
# generated from docstrings: tests/test_docs.py), CONTRIBUTING.md
DOCS = [README, *sorted(p for p in (REPO / "docs").glob("*.md")), REPO / "CONTRIBUTING.md"]
BIN = os.path.dirname(sys.executable)          # where this environment's `python` and `accel` live
INSTALLED = os.path.dirname(accel.__file__)
needs_checkout = pytest.mark.skipif(not (README.exists() and (REPO / "accel" / "_impl.py").exists()),
                                    reason="no checkout next to the tests")
pytestmark = needs_checkout

_COMMAND = re.compile(r"^(?:[A-Z_]+=\S+ )*(?:pip|pytest|python|accel|mkdocs|mypy|\.ci/run)(?: |$)")


def fenced_blocks(docs=(README,)):
    """[(heading, info string, text)] of the documents' fenced blocks (the README's by default)."""
    out, heading, block = [], None, None
    for line in "\n".join(d.read_text() for d in docs).splitlines():
        if block is not None:
            if line.startswith("```"):
                out.append((heading, block[0], "\n".join(block[1:])))
                block = None
            else:
                block.append(line)
        elif line.startswith("```"):
            block = [line[3:].strip()]
        elif line.startswith("## "):
            heading = line[3:].strip()
    return out


def inline_commands():
    """Every inline code span of the documents' prose (tables excluded) that is a shell command."""
    text, spans = "\n".join(d.read_text() for d in DOCS), set()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = "\n".join(ln for ln in prose.splitlines() if not ln.startswith("|"))
    for span in re.findall(r"`([^`\n]+)`", prose.replace("\n", " ")):
        if _COMMAND.match(span):
            spans.add(span)
    return spans


def shell(command, timeout=120, **env):
    """``command`` in bash from the checkout's root, with this environment's bin first on PATH."""
    # a newcomer's shell: not this run's runtime choice, nor an xdist worker's variables (pytest-benchmark
    # < 5.3 disables itself, failing --benchmark-only, where PYTEST_XDIST_WORKER is set)
    full = {k: v for k, v in os.environ.items()
            if k not in ("ACCEL_CUDART", "ACCEL_EMU_DEVICES", "LD_PRELOAD") and not k.startswith("PYTEST_XDIST_")}
    full["PATH"] = BIN + os.pathsep + full.get("PATH", "")
    full.update(env)
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=full, capture_output=True, text=True,
                          timeout=timeout)


def _report_ok(proc):
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"accel {accel.__version__} ({INSTALLED})"
    assert "backend:" in proc.stdout and "devices:" in proc.stdout


def check_report(command):
    _report_ok(shell(command))


def check_emulated_report(command):
    proc = shell(command)
    _report_ok(proc)
    assert "EMULATED" in proc.stdout and "devices: 4" in proc.stdout


def check_help(command):
    proc = shell(command)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: accel [-h | --help | -V | --version] [bench | emu ...]")


def check_emu_synopsis(command):
    proc = shell("accel emu --help")
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == f"usage: {command}", proc.stdout


def check_emu_help(command):
    proc = shell(command)
    assert proc.returncode == 0 and proc.stdout.startswith("usage: accel emu "), proc.stderr
    assert all(f"  {key:6} " in proc.stdout for key in ("h100", "a100", "a10", "l4", "t4", "b200"))


def check_profile_machine(command):
    assert command == "accel emu --profile t4,a100,h100,b200 -- pytest"
    proc = shell("cd / && accel emu --profile t4,a100,h100,b200 -- python -c "
                 "'import accel.cuda as c; print([c.get_device_capability(i) for i in range(c.device_count())])'")
    assert proc.returncode == 0 and proc.stdout.strip() == "[(7, 5), (8, 0), (9, 0), (10, 0)]", proc.stderr


def check_collects(command):
    """A pytest command of the README (a benchmark run): it collects what it names, from the checkout."""
    proc = shell(command + " --collect-only -q")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert re.search(r"^\d+(/\d+)? tests? (collected|selected)", proc.stdout, re.M), proc.stdout


def check_torch_on_emulator(command):
    probe = shell("python -c 'import torch; assert torch.version.cuda'")
    if probe.returncode:
        pytest.skip("needs torch's CUDA wheel (tests/test_standin_torch.py covers it where installed)")
    proc = shell(command, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "2", proc.stdout + proc.stderr


def check_pure_python_install(command, tmp_path):
    """Built into a target directory, without build isolation (the suite may have no network)."""
    assert command.startswith("pip install --config-settings=") and command.endswith(" ."), command
    target = tmp_path / "site"
    proc = shell(f"pip install --quiet --no-deps --no-build-isolation --target {target} "
                 f"--config-settings=build-dir={tmp_path / 'build'} {command[len('pip install '):]}", timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # -S: the target's accel alone (an editable install's loader, which a .pth of site-packages sets up, would
    # take precedence over PYTHONPATH)
    probe = subprocess.run([sys.executable, "-S", "-c", "import accel; print(accel.backend, accel.__file__)"],
                           cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(target)}, capture_output=True,
                           text=True, timeout=60)
    assert probe.stdout.split() == ["python", str(target / "accel" / "__init__.py")], probe.stderr


def check_quick_rebuild(command, tmp_path):
    """CONTRIBUTING.md's quick rebuild: the build tools of the test extra, no isolation (into a scratch target
    here, so as not to replace the build under test)."""
    assert command.endswith("--config-settings=build-dir=build .")
    target = tmp_path / "site"
    proc = shell(command.replace("build-dir=build", f"build-dir={tmp_path / 'build'}").replace(
        "pip install ", f"pip install --quiet --target {target} "), timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list((target / "accel" / "_native").glob("_device*.so")), "the quick rebuild built no native twin"


def check_example_on_emulator(command, tmp_path):
    """The README's words on its examples: each ```python block, saved as example.py, runs with that command
    (from the directory holding it, in a newcomer's shell)."""
    blocks = [text for _, info, text in fenced_blocks() if info == "python"]
    assert len(blocks) >= 4
    for code in blocks:
        (tmp_path / "example.py").write_text(code + "\n")
        proc = shell(f"cd {tmp_path} && {command}", timeout=300)
        assert proc.returncode == 0, code + proc.stdout + proc.stderr


def check_version(command):
    """One line: accel's version, the distribution's name, the backend."""
    proc = shell(command)
    assert proc.returncode == 0, proc.stderr
    import accel
    assert proc.stdout == (f"accel {accel.__version__} (distribution accel-runtime; backend {accel.backend}; "
                           f"Python {sys.version.split()[0]})\n"), proc.stdout


def check_nvml_extra(command):
    """The extra exists and names the distribution accel's NVML support imports (pynvml)."""
    assert command == "pip install '.[nvml]'"
    text = (REPO / "pyproject.toml").read_text()
    assert re.search(r'^nvml = \["nvidia-ml-py[>=<\d.]*"\]$', text, re.M), "pyproject.toml lost the [nvml] extra"


# command -> how it is checked: "ci" (.ci/run runs it verbatim), a check above, or the test that runs it
CHECKS = {
    "pip install . && accel": "ci",
    'pip install ".[test]" && pytest': "ci",
    "accel": check_report,
    "python -m accel": check_report,
    "ACCEL_CUDART=emu accel": check_emulated_report,
    "accel --help": check_help,
    "accel bench": "tests/test_foundation.py::test_cli_bench_table",
    "accel emu": "tests/test_emu_cli.py",
    "accel emu [--devices N] [--profile P] [--] COMMAND [ARGS...]": check_emu_synopsis,
    "accel emu --help": check_emu_help,
    "accel emu --profile t4,a100,h100,b200 -- pytest": check_profile_machine,
    'accel emu --devices 2 -- python -c "import torch; print(torch.cuda.device_count())"': check_torch_on_emulator,
    "pip install --config-settings=setup-args=-Dnative=false .": check_pure_python_install,
    "pip install --config-settings=build-dir=/tmp/accel-build .":
        "tests/test_build_routes.py::test_build_dir_outside_a_read_only_checkout_writes_nothing_into_it",
    "accel --version": check_version,
    "ACCEL_CUDART=emu python example.py": check_example_on_emulator,
    "python tools/gen_lazy_stub.py": "tests/test_types.py::test_lazy_stubs_are_current",
    "mkdocs build": "tests/test_docs.py::test_docs_site_builds_strict",
    # (an editable install's form of the typed examples' mypy run: tests/test_types.py's _mypy)
    "MYPYPATH=/path/to/accel-checkout mypy --follow-imports=silent your_code.py":
        "tests/test_types.py::test_typed_example_passes_mypy_strict",
    ".ci/run --list-cpythons": "tests/test_build_routes.py::test_ci_finds_the_other_cpythons_of_requires_python",
    "pip install --no-build-isolation -e .":
        "tests/test_build_routes.py::test_editable_install_runs_the_suite_and_rebuilds_on_import",
    "pip install --no-build-isolation --no-deps --config-settings=build-dir=build .": check_quick_rebuild,
    "ACCEL_EMU_MEMORY=2G accel emu --devices 4 -- python -m numba.runtests numba.cuda.tests.cudadrv":
        "tests/test_peer_suites.py::test_numba_cuda_suite_on_the_emulator",
    "accel emu --devices 2 -- python -m pytest cuda_core/tests/test_device.py cuda_core/tests/test_stream.py "
    "cuda_core/tests/test_event.py cuda_core/tests/test_context.py cuda_core/tests/test_memory.py "
    "cuda_core/tests/test_memory_peer_access.py cuda_core/tests/memory cuda_core/tests/system":
        "tests/test_standin_cuda_core.py::test_cuda_core_tests_on_the_emulator",
    "pip install '.[nvml]'": check_nvml_extra,
    "pytest bench/ --benchmark-only": check_collects,
    "pytest bench/test_bench_lazy_tensor.py": check_collects,
    "ACCEL_BACKEND=python pytest bench/test_bench_lazy_tensor.py": check_collects,
    "pytest bench/test_bench_stream.py -k record --benchmark-only": check_collects,
    "pytest bench/test_bench_graphs.py --benchmark-only": check_collects,
    "pytest bench/test_bench_ptx.py --benchmark-only -s": check_collects,
    "pytest bench/test_bench_lazy_attention.py --benchmark-only": check_collects,
    "pytest bench/test_bench_lazy_firstseen.py --benchmark-only --benchmark-timer=time.process_time": check_collects,
    "ACCEL_BACKEND=python pytest bench/test_bench_lazy_firstseen.py --benchmark-only --benchmark-timer=time.process_time":
        check_collects,
    "pytest bench/test_bench_lazy_cuda.py --benchmark-only": check_collects,
    'pip install ".[cuda-lazy]"': "tests/test_lazy_cuda.py::test_no_nvrtc_import_error",
    "ACCEL_BENCH_SCALING=full pytest bench/test_bench_scaling.py --benchmark-only --benchmark-timer=time.process_time":
        check_collects,
    "python -m pytest": "tests/test_foundation.py::test_suite_refuses_source_tree",   # the README warns against it
    "ACCEL_EMU_DEVICES=1 pytest": "tests/test_suite_devices.py::test_one_emulated_device_skips_the_multi_device_tests",
    "python tools/gen_bindings.py accel/_cudart_table.py readme": "tests/test_bindings_table.py::test_readme_lists_exactly_the_table",
}
CI_SECTIONS = ("Install and run", "Tests")
# code spans that look like commands but are words in a sentence
MENTIONS = {"pytest", "python", "python -m", "accel / peer", ".ci/run",
            "pip install accel"}    # what not to type: installs the unrelated project of that name


def test_every_command_is_checked():
    shell_blocks = {(h, text) for h, info, text in fenced_blocks(DOCS) if info == "" and _COMMAND.match(text)}
    assert shell_blocks == {(h, c) for c, how in CHECKS.items() if how == "ci" for h in CI_SECTIONS
                            if (h, c) in shell_blocks} and len(shell_blocks) == len(CI_SECTIONS), (
        f"the README's fenced commands are not the ones .ci/run runs: {sorted(shell_blocks)}")
    ci = (REPO / ".ci" / "run").read_text()
    assert all(f'"{h}"' in ci for h in CI_SECTIONS), ".ci/run no longer runs the README's sections"
    unchecked = sorted(inline_commands() - set(CHECKS) - MENTIONS)
    assert not unchecked, f"README commands nobody runs (add a check in {__file__}): {unchecked}"
    stale = sorted(c for c, how in CHECKS.items() if how != "ci" and c not in inline_commands())
    assert not stale, f"checks of commands the README no longer gives: {stale}"
    for how in CHECKS.values():
        if isinstance(how, str) and how != "ci":
            path, _, name = how.partition("::")
            assert (REPO / path).exists() and (not name or f"def {name}(" in (REPO / path).read_text()), how


@pytest.mark.parametrize("command", [c for c, how in CHECKS.items() if callable(how)])
def test_readme_command(command, tmp_path):
    check = CHECKS[command]
    if "tmp_path" in check.__code__.co_varnames[:check.__code__.co_argcount]:
        check(command, tmp_path)
    else:
        check(command)


def _python_examples():
    return [pytest.param(text, id=f"{doc.name}:{i}") for doc in DOCS
            for i, (_, info, text) in enumerate(b for b in fenced_blocks([doc]) if b[1] == "python")]


def test_readme_has_examples():
    assert len([1 for _, info, _ in fenced_blocks() if info == "python"]) >= 4


@pytest.mark.parametrize("code", _python_examples())
def test_python_example_runs_on_the_emulator(code):
    proc = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True, text=True, timeout=120,
                          env={**os.environ, "ACCEL_CUDART": "emu", "ACCEL_EMU_DEVICES": "4"})
    assert proc.returncode == 0, proc.stderr


# -- the command line ---------------------------------------------------------------------------------

def test_python_m_accel_in_the_checkout_runs_the_installed_build():
    """Issue 23: `python -m accel` typed in the checkout's root imported the unbuilt source tree."""
    _report_ok(shell("python -m accel"))
    proc = shell("python -m accel emu --devices 2 -- python -c 'import os; print(os.environ[\"ACCEL_EMU_DEVICES\"])'")
    assert proc.returncode == 0 and proc.stdout == "2\n", proc.stderr
    # interpreter options survive the hand-off
    proc = shell("python -O -W error::UserWarning -m accel --help && python -O -m accel.emu_probe_x", )
    assert proc.stdout.startswith("usage: python -m accel "), proc.stderr
    assert "No module named accel.emu_probe_x" in proc.stderr and "unbuilt" not in proc.stderr


@pytest.mark.not_editable("the checkout's accel/ is the installed package, so importing it there works")
def test_import_in_the_checkout_says_what_to_type():
    proc = shell("python -c 'import accel'")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: accel is being imported from its unbuilt source tree ({REPO / 'accel'})")
    assert f"accel is installed ({INSTALLED}); run your program from another directory (e.g. `cd ~`)" in last
    assert "During handling" not in proc.stderr


def test_python_m_accel_without_an_install_says_what_to_type():
    # -S: no site-packages, so the only accel on sys.path is the checkout's
    proc = shell("python -S -m accel")
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    python = os.path.join(BIN, "python")
    assert f"accel is not installed in this interpreter ({python}): run " \
           f"`{python} -m pip install {os.path.realpath(REPO)}`" in last, proc.stderr


@pytest.mark.parametrize("prog", ["accel", "python -m accel"])
def test_help_and_usage_errors(prog):
    proc = shell(f"{prog} --help")
    assert proc.returncode == 0 and proc.stdout.splitlines()[0] == f"usage: {prog} [-h | --help | -V | --version] [bench | emu ...]"
    assert f"{prog} emu [--devices N] [--profile P] [--] COMMAND [ARGS...]" in proc.stdout
    assert shell(f"{prog} -h").stdout == proc.stdout
    proc = shell(f"{prog} emu --help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {prog} emu [--devices N]"), proc.stderr
    proc = shell(f"{prog} bench --help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: {prog} bench\n"), proc.stderr
    proc = shell(f"{prog} -V")
    assert proc.returncode == 0 and proc.stdout.startswith("accel ") and shell(f"{prog} --version").stdout == proc.stdout
    for args, error in ((["--frob"], "unknown argument '--frob'"), (["bench", "x"], "unexpected argument 'x'"),
                        (["--version", "x"], "unexpected argument 'x'")):
        proc = shell(f"{prog} {' '.join(args)}")
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert proc.stderr.splitlines()[-1] == f"error: {error}"
