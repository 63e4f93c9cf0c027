"""The peers' own graph APIs on the emulated runtime: cuda.core's ``GraphBuilder`` (stream capture through
the libcuda.so.1 stand-in's driver entry points, host callbacks kept alive by user objects) with a copy and a
host callback, replayed with fresh input bytes.  Each runs in a fresh interpreter that calls
accel.emu.activate() before importing the peer; skipped with the reason where the peer is not importable."""
import importlib.util
import json
import pathlib

import pytest

_spec = importlib.util.spec_from_file_location("standin_fixtures",
                                               pathlib.Path(__file__).with_name("standin_fixtures.py"))
_fx = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fx)

GRAPH_BUILDER = """
import accel.emu
accel.emu.activate(devices=2)
import ctypes, gc, json
import numpy as np
from cuda.core import Device, LegacyPinnedMemoryResource

dev = Device(1)
dev.set_current()
s = dev.create_stream()
pin = LegacyPinnedMemoryResource()
N = 4096
src, dst = pin.allocate(N), pin.allocate(N)
mid = dev.memory_resource.allocate(N, stream=s)
s.sync()
host = lambda b: np.ctypeslib.as_array((ctypes.c_ubyte * N).from_address(int(b.handle)))
hsrc, hdst = host(src), host(dst)
rt = ctypes.CDLL(accel.emu.cudart_path())
live = lambda: [rt.accelEmuLiveUserObjects(), rt.accelEmuLiveGraphs(), rt.accelEmuLiveGraphExecs()]
before = live()
seen = []
gb = dev.create_graph_builder().begin_building()
mid.copy_from(src, stream=gb)                       # host -> device -> host, then a callback that reads dst
dst.copy_from(mid, stream=gb)
gb.callback(lambda: seen.append(bytes(hdst)))
gb.end_building()
g = gb.complete()
ok = []
for i in range(5):                                  # fresh input bytes every launch
    hsrc[:] = (np.arange(N) * (i + 3)) % 251
    hdst[:] = 0
    g.launch(s)
    s.sync()
    ok.append(bytes(hdst) == bytes(hsrc) and seen[-1] == bytes(hsrc))
held = live()
g.close(); gb.close(); del g, gb; gc.collect()
print(json.dumps([ok, len(seen), held[0] > before[0], live() == before]))
"""


@_fx.needs_standins
@_fx.needs_cuda_core
def test_cuda_core_graph_builder_with_a_copy_and_a_host_callback(subprocess_python):
    """cuda.core's GraphBuilder on the stand-ins: begin_building, two copies and a callback captured,
    end_building / complete, five launches each checked byte for byte (the callback sees the copied bytes:
    it runs after the copies); the user objects that keep the callback alive go with the graph."""
    proc = subprocess_python(GRAPH_BUILDER, env={"ACCEL_EMU_TRACE": None, "ACCEL_EMU_FAIL": None})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [[True] * 5, 5, True, True]
