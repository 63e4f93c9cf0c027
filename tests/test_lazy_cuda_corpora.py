"""The lazy corpora on the CUDA backend (set_backend("cuda")) on the emulator, both twins: every program of
tests/data/lazy_golden.json (the torch 2.13 LTC programs, the model programs among them, and the counter
scenarios) and a sample of each fuzz corpus (tests/data/lazy_fuzz*.json.gz, every SAMPLE-th program), checked
as their numpy-backend tests check them: IR text and graph hash equal torch's byte for byte, LTC counters
equal (the backend's own counters aside), integer and bool values exact, float values within the corpora's
tolerances (tools/gen_lazy_fuzz.py's RTOL; the golden programs within RTOL below, as reductions and matmul add
in another order than torch's); and kernels ran
(CudaKernelLaunch > 0).  Graphs the code generation does not cover run on the host (CudaFallback): their share
is reported, not asserted.

Cost: NVRTC compiles each distinct graph once (~100 ms); the twins share the images through an on-disk kernel
cache (ACCEL_LAZY_KERNEL_CACHE in a session directory), so the second twin compiles nothing.  The fuzz sample
keeps the run to about a minute per twin on a 2-core CI machine; the shapes stay the corpora's (small, odd:
partial warps and blocks throughout).  Skipped without NVRTC."""
import importlib.util
import json
import pathlib

import pytest

try:
    from accel import emu as _emu
    _NVRTC = _emu.real_nvrtc_path()
except Exception:           # noqa: BLE001 (an install without the emulator's module)
    _NVRTC = None

pytestmark = pytest.mark.skipif(_NVRTC is None, reason="NVRTC (nvidia-cuda-nvrtc, the cuda-lazy extra) is not installed")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
SAMPLE = 12             # every SAMPLE-th program of each fuzz corpus
RTOL = 1e-4             # golden float values (both dtypes): relative and absolute tolerance on the CUDA backend


def _load(name):
    spec = importlib.util.spec_from_file_location(f"_corpora_{name}", HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_golden = _load("test_lazy_tensor_golden")
_fuzz = _load("test_lazy_fuzz")


def _golden_script():
    """test_lazy_tensor_golden's CHECK on the CUDA backend: the backend's counters left out of the scenarios'
    counter comparison, the kernel counters of the programs printed beside the results."""
    code = _golden.CHECK
    steps = [
        ("doc = json.load(open(sys.argv[2]))\n",
         f"doc = json.load(open(sys.argv[2]))\nL.set_backend('cuda')\nRTOL_CUDA = {RTOL!r}\n"),
        ("from accel.lazy import metrics as M\nfor sc in",
         "from accel.lazy import metrics as M\n"
         "_kc = {n: M.counter_value(n) or 0 for n in ('CudaKernelLaunch', 'CudaFallback', 'NvrtcCompile')}\n"
         "for sc in"),
        # float results within the CUDA backend's tolerance for reductions and matmul (they add in another order
        # than numpy / torch: a float64 result computed from a float32 sum differs from torch's in float32's
        # digits); elementwise float values are checked bit-exact against the numpy backend in test_lazy_cuda
        ("rtol = 1e-5 if want.dtype == np.float32 else 1e-12", "rtol = RTOL_CUDA"),
        ("if n not in gen.COUNTERS_SKIPPED}", "if n not in gen.COUNTERS_SKIPPED and not n.startswith(('Cuda', 'Nvrtc'))}"),
        ('print(json.dumps({"count": len(doc["programs"]), "fails": fails}))',
         'print(json.dumps({"count": len(doc["programs"]), "fails": fails, "kernels": _kc}))'),
    ]
    for old, new in steps:
        assert code.count(old) == 1, old
        code = code.replace(old, new)
    return code


FUZZ = r'''
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("fuzz", sys.argv[1])
fuzz = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fuzz)
import accel, accel.lazy as L
from accel.lazy import metrics as M
assert accel.backend == sys.argv[3], accel.backend
L.set_backend("cuda")
out = {}
for path in sys.argv[4:]:
    progs = fuzz.load_corpus(path)["programs"][::int(sys.argv[2])]
    M.reset()
    fails = fuzz.replay(L, progs)
    out[path] = {"count": len(progs), "fails": {k: v[:2] for k, v in fails.items()},
                 "kernels": {n: M.counter_value(n) or 0 for n in ("CudaKernelLaunch", "CudaFallback", "NvrtcCompile")}}
print(json.dumps(out))
'''


@pytest.fixture(scope="session")
def kernel_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("lazy_kernel_cache"))


_RESULTS = {}


def _run(what, backend, subprocess_python, kernel_cache):
    from accel import _build_config
    if backend == "native" and not _build_config.NATIVE:
        pytest.skip("installed with -Dnative=false: no compiled twin")
    key = (what, backend)
    if key not in _RESULTS:
        if what == "golden":
            code = f"import sys; sys.argv = ['x', {str(_golden.TOOLS)!r}, {str(_golden.DATA)!r}, {backend!r}]\n" + \
                _golden_script()
        else:
            paths = [str(p) for _, p in sorted(_fuzz.CORPORA.items())]
            code = f"import sys, warnings; warnings.simplefilter('ignore'); " \
                   f"sys.argv = ['x', {str(_fuzz.TOOL)!r}, {SAMPLE!r}, {backend!r}, *{paths!r}]\n" + FUZZ
        r = subprocess_python(code, env={"ACCEL_BACKEND": backend, "ACCEL_LAZY_KERNEL_CACHE": kernel_cache},
                              timeout=600)
        assert r.returncode == 0, r.stderr[-3000:]
        _RESULTS[key] = json.loads(r.stdout.strip().splitlines()[-1])
    return _RESULTS[key]


@pytest.mark.parametrize("backend", ["native", "python"])
def test_golden_programs_on_cuda(backend, subprocess_python, kernel_cache):
    res = _run("golden", backend, subprocess_python, kernel_cache)
    assert res["count"] >= 100
    assert res["fails"] == [], "\n".join(res["fails"][:10])
    k = res["kernels"]
    assert k["CudaKernelLaunch"] > 0, k
    print(f"golden on cuda ({backend}): {res['count']} programs, {k}")


@pytest.mark.parametrize("backend", ["native", "python"])
def test_fuzz_sample_on_cuda(backend, subprocess_python, kernel_cache):
    res = _run("fuzz", backend, subprocess_python, kernel_cache)
    for path, r in res.items():
        assert r["count"] >= 50, (path, r["count"])
        unexpected = {n: f for n, f in r["fails"].items() if n not in _fuzz.KNOWN}
        assert not unexpected, f"{path}: {len(unexpected)} programs differ from torch on the CUDA backend:\n" + \
            "\n".join(f"{n}: {f}" for n, f in list(unexpected.items())[:8])
        assert r["kernels"]["CudaKernelLaunch"] > 0, (path, r["kernels"])
        print(f"fuzz sample on cuda ({backend}) {pathlib.Path(path).name}: {r['count']} programs, {r['kernels']}")
