"""CUDA_VISIBLE_DEVICES on the emulated runtime, end to end, both twins (subprocesses: read once per process).

The emulator filters and renumbers its 4 (physical) devices like the real driver; its NVML stand-in
reports all 4 with their UUIDs, as NVML does.  accel.cuda's visible-device logic (torch's rules over
NVML) must then agree with the emulated runtime's count and with the UUIDs of the devices it shows.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap

import pytest

from accel import _lib

EMU = _lib.emu_path()
pytestmark = pytest.mark.skipif(os.environ.get("ACCEL_CUDART") != "emu" or not os.path.exists(EMU),
                                reason="needs the emulated runtime")

# CUDA_VISIBLE_DEVICES -> the physical devices shown, in order.  In values, <d> is the whole UUID
# text of physical device d (GPU-...), <d:k> its first k characters after "GPU-".  The emulated UUIDs
# start with the device's index as a byte, so every one starts with "0": GPU-0 is ambiguous.
TABLE = [
    (None, [0, 1, 2, 3]), ("", []), ("2,0", [2, 0]), ("3,2,1,0", [3, 2, 1, 0]),
    ("1gpu2,3ampere", [1, 3]), (" 1 , 2 ", [1, 2]), ("+3,007", [3]), ("-0,2", [0, 2]),
    ("0,5,1", [0]), ("3,-1,1", [3]), ("0,1,,2", [0, 1]), ("2,x,3", [2]), ("x", []),
    ("0,0", []), ("1,2,1", []), ("00,0", []), ("0,7,0", []), ("0,-1,0", [0]),
    ("99999999999999999999999,1", []), (",".join(["0"] * 300), []), ("3,2,1,0," + ",".join(["1"] * 300), []),
    ("0,1,2,3," + ",".join(str(i) for i in range(4, 300)), [0, 1, 2, 3]),
    ("<2>", [2]), ("GPU-<3:8>,GPU-<1:8>", [3, 1]), ("GPU-<1:2>,GPU-zzz,GPU-<0>", [1]), ("GPU-0", []),
    ("<2>,1", [2]), ("<1>,<1>", []), ("GPU-<1:8>,<1>", []), ("<0>, <1>", [0]), ("gpu-<0:8>", []),
    ("GPU-<0:4>,GPU-zzz,GPU-<0:4>", []),
    ("MIG-<0>", []), ("0,MIG-<1>", [0]),
]

PROBE = """
import json, os
import accel.cuda as cuda
from accel.cuda import _visible
out = {"nvml_count": _visible._device_count_nvml()}   # accel's NVML-based count (torch's rules)
os.environ["ACCEL_NVML_BASED_CUDA_CHECK"] = "1"
out["device_count_nvml_based"] = cuda.device_count()
del os.environ["ACCEL_NVML_BASED_CUDA_CHECK"]
out["device_count"] = cuda.device_count()            # the emulated runtime's count
out["uuids"] = [str(cuda.get_device_properties(i).uuid) for i in range(out["device_count"])]
out["nvml_uuids"] = _visible._raw_device_uuid_nvml()
print(json.dumps(out))
"""


def _probe(backend, visible):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ACCEL_EMU_", "ACCEL_NVML"))}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("PYTORCH_NVML_BASED_CUDA_CHECK", None)
    env.update(ACCEL_BACKEND=backend, ACCEL_CUDART="emu", ACCEL_NVML=EMU, ACCEL_EMU_DEVICES="4")
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    return subprocess.Popen([sys.executable, "-c", PROBE], env=env, cwd=tempfile.gettempdir(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _result(proc):
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def physical():
    """UUID texts (GPU-...) of the 4 physical devices, from NVML in a process that sees them all."""
    r = _result(_probe("python", None))
    assert r["nvml_uuids"] == ["GPU-" + u for u in r["uuids"]] and len(r["uuids"]) == 4
    return r["nvml_uuids"]


def _expand(value, physical):
    if value is None:
        return None

    def sub(m):
        d, k = int(m.group(1)), m.group(2)
        return physical[d] if k is None else physical[d][4:4 + int(k)]
    return re.sub(r"<(\d)(?::(\d+))?>", sub, value)


def test_table_is_unambiguous_by_construction(physical):
    """The prefixes the table uses name one device each, except those meant to be ambiguous."""
    for d, u in enumerate(physical):
        assert [v for v in physical if v.startswith(u[:6])] == [u]
        assert u.startswith(f"GPU-{d:02x}")


def _results(backend, values, concurrent=8):
    """The probe's result for each CUDA_VISIBLE_DEVICES value, ``concurrent`` processes at a time."""
    results = []
    for start in range(0, len(values), concurrent):
        procs = [_probe(backend, v) for v in values[start:start + concurrent]]
        results += [_result(p) for p in procs]
    return results


def test_visible_devices_agree(twin, physical):
    results = _results(twin.name, [_expand(value, physical) for value, _ in TABLE])
    mismatches = []
    for (value, expected), r in zip(TABLE, results):
        want_uuids = [physical[d][4:] for d in expected]
        nvml_count = -1 if (value or "").startswith("MIG-") else len(expected)   # accel leaves MIG to cudart
        got = (r["device_count"], r["uuids"], r["device_count_nvml_based"], r["nvml_count"], r["nvml_uuids"])
        want = (len(expected), want_uuids, len(expected), nvml_count, physical)
        if got != want:
            mismatches.append(f"CUDA_VISIBLE_DEVICES={value!r}: got {got}, expected {want}")
    assert not mismatches, "\n".join(mismatches)


@pytest.mark.devices(4)
def test_hidden_devices_are_invalid_ordinals(twin, physical):
    """Device 1 of CUDA_VISIBLE_DEVICES=3,1 is physical device 1; ordinal 2 does not exist."""
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent("""
        import accel.cuda as cuda
        from accel.errors import CudaError
        print(cuda.device_count(), cuda.get_device_properties(1).uuid, cuda.get_device_properties(0).uuid)
        cuda.set_device(1)
        s = cuda.Stream()
        print(cuda.current_device(), s.device_index)
        try:
            cuda.set_device(2)
        except CudaError as e:
            print(e.code)
    """)], env=dict(os.environ, ACCEL_BACKEND=twin.name, CUDA_VISIBLE_DEVICES="3,1"),
        cwd=tempfile.gettempdir(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split("\n")
    assert lines[0] == f"2 {physical[1][4:]} {physical[3][4:]}"
    assert lines[1:3] == ["1 1", "101"]
