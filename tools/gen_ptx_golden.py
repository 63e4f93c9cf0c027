"""Records the PTX conformance vectors (tests/ptx_reference.py) on a real GPU: tests/data/ptx_golden/*.json.

Run on a machine with an NVIDIA GPU and driver, with cuda-bindings installed (no accel build needed):

    python tools/gen_ptx_golden.py                 # all variants, device 0
    python tools/gen_ptx_golden.py -k cvt -k fma   # only variants whose name contains one of the words

Each variant's kernel (ptx_reference.kernel_for: one instruction per thread, or a warp-wide matrix
variant: mma, ldmatrix, stmatrix, movmatrix, cp.async) is loaded with cuModuleLoadData (the
driver's PTX JIT) and run over the variant's operands; the output bits are written with the operands and
the device's name and compute capability.  tests/test_ptx_conformance.py then compares the engine with
these results bit for bit (NaN payloads included), so any difference between the engine and the GPU is a
failing test.  A variant the GPU's JIT refuses is recorded under "refused" with the driver's message.
"""
import argparse
import importlib.util
import json
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("ptx_reference", ROOT / "tests" / "ptx_reference.py")
R = importlib.util.module_from_spec(spec)
spec.loader.exec_module(R)


def check(res):
    from cuda.bindings import driver
    err = res[0] if isinstance(res, tuple) else res
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{err!r}")
    if isinstance(res, tuple):
        return res[1] if len(res) == 2 else res[1:]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-k", action="append", default=[], help="only variants whose name contains this")
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "ptx_golden"))
    args = ap.parse_args()
    from cuda.bindings import driver
    check(driver.cuInit(0))
    dev = check(driver.cuDeviceGet(args.device))
    name = check(driver.cuDeviceGetName(128, dev)).split(b"\0")[0].decode()
    major = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev))
    minor = check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev))
    ctx = check(driver.cuDevicePrimaryCtxRetain(dev))
    check(driver.cuCtxSetCurrent(ctx))
    variants = [v for v in R.all_variants() + R.matrix_variants() if not args.k or any(k in v.name for k in args.k)]
    out = {"device": name, "cc": f"{major}.{minor}", "variants": {}, "refused": {}}
    for v in variants:
        text = R.kernel_for(v).encode() + b"\0"
        res = driver.cuModuleLoadData(text)
        if res[0] != driver.CUresult.CUDA_SUCCESS:
            out["refused"][v.name] = repr(res[0])
            print(f"refused {v.name}: {res[0]!r}", file=sys.stderr)
            continue
        mod = res[1]
        fn = check(driver.cuModuleGetFunction(mod, b"k"))
        inp = R.inputs_for(v)
        n, nw = len(inp), R.out_words(v)
        d_in = check(driver.cuMemAlloc(inp.nbytes))
        d_out = check(driver.cuMemAlloc(n * nw * 8))
        d_scr = check(driver.cuMemAlloc(n * 8))
        check(driver.cuMemcpyHtoD(d_in, inp.ctypes.data, inp.nbytes))
        check(driver.cuMemsetD8(d_out, 0, n * nw * 8))
        params = [np.array([int(d_in)], np.uint64), np.array([int(d_out)], np.uint64), np.array([n], np.uint32),
                  np.array([int(d_scr)], np.uint64)]
        ptrs = np.array([p.ctypes.data for p in params], np.uint64)
        check(driver.cuLaunchKernel(fn, (n + R.BLOCK - 1) // R.BLOCK, 1, 1, R.BLOCK, 1, 1, 0, 0, ptrs.ctypes.data, 0))
        check(driver.cuCtxSynchronize())
        res_out = np.zeros(n * nw, np.uint64)
        check(driver.cuMemcpyDtoH(res_out.ctypes.data, d_out, n * nw * 8))
        for p in (d_in, d_out, d_scr):
            check(driver.cuMemFree(p))
        check(driver.cuModuleUnload(mod))
        out["variants"][v.name] = {"body": v.body, "td": v.td, "inputs": [list(x) for x in v.inputs],
                                   "outputs": [int(x) for x in res_out]}
        print(f"{v.name}: {n} vectors")
    dest = pathlib.Path(args.out)
    dest.mkdir(parents=True, exist_ok=True)
    tag = name.replace(" ", "_").replace("/", "_")
    path = dest / f"{tag}_sm{major}{minor}.json"
    path.write_text(json.dumps(out, indent=0))
    print(f"wrote {path} ({len(out['variants'])} variants, {len(out['refused'])} refused)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
