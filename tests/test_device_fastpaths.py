"""The hot paths' shortcuts, in a fresh process per twin (emulated runtime): before any thread ever
recorded a pending target the guards skip the thread-local target, and the first target recorded must
still be honoured by current_device(), current_stream(), Event.record() and the next guard, on that
thread only; the python twin binds its cudart calls on first use."""
import json

import pytest

from accel import _lib

SCRIPT = r"""
import json, threading
from accel import _lib
from accel._{twin} import _cudart as R, _device as D, _stream as S

out = []
ready, go, other = threading.Event(), threading.Event(), {{}}


def watcher():
    ready.set()
    go.wait()
    other["seen"] = [D.current_device(), R.cudaGetDevice()]


t = threading.Thread(target=watcher)
t.start()
ready.wait()
out.append(D.current_device())                      # the first CUDA call of the process
with D.device(0) as g:                              # no switch; exit: to == runtime
    out.append([g.prev_idx, D.current_device()])
out.append(g.idx)
with D.device(2):                                   # exit: device 0 has no context -> first target ever
    out.append(D.current_device())
out.append([D.current_device(), R.cudaGetDevice(), D.has_primary_context(0)])
go.set()
t.join()
out.append(other["seen"])                           # the other thread has no target
with D.device(3) as g:                              # enter from the pending target (logical device 0)
    out.append([g.prev_idx, R.cudaGetDevice()])
out.append([D.current_device(), R.cudaGetDevice(), D.has_primary_context(0)])
s = S.current_stream()                              # materialises the target
out.append([s.device_index, R.cudaGetDevice(), D.has_primary_context(0)])
_lib.cudart().cdll.accelEmuResetContexts()
with D.device(2):
    pass                                            # target 0 again (no context after the reset)
e = S.Event()
e.record()                                          # on the current stream: materialises the target
e.synchronize()
out.append([e.device.index, D.current_device(), R.cudaGetDevice(), D.has_primary_context(0)])
print(json.dumps(out))
"""

EXPECTED = [0, [0, 0], 0, 2, [0, 2, False], [0, 0], [0, 3], [0, 3, False], [0, 0, True],
            [0, 0, 0, True]]


@pytest.fixture
def emulated():
    if not _lib.cudart().emulated:
        pytest.skip("needs the emulated runtime")


@pytest.mark.devices(4)
def test_first_pending_target_is_honoured(twin, subprocess_python, emulated):
    r = subprocess_python(SCRIPT.format(twin=twin.name))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == EXPECTED
