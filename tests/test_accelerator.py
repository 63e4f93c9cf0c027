"""accel.accelerator (torch.accelerator's API): forwarding to accel.cuda (both twins) or to accel.mtia,
and the no-accelerator answers.  Fresh interpreters: the selection is per process."""
import json
import os
import pathlib
import textwrap

import pytest

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)
MTIA_TESTS = str(pathlib.Path(__file__).with_name("test_mtia.py").resolve())


@pytest.fixture
def backend(twin):
    return twin.name


def run(subprocess_python, code, **env):
    proc = subprocess_python(textwrap.dedent(code), env=env)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.devices(4)
def test_cuda_accelerator(subprocess_python, backend):
    out = run(subprocess_python, """
        import json, accel, accel.cuda as cuda
        import accel.accelerator as acc
        res = [accel.backend, acc.is_available(), str(acc.current_accelerator()), acc.current_accelerator() == "cuda",
               acc.device_count(), acc.current_device_index()]
        acc.set_device_index(2)
        res.append([cuda.current_device(), acc.current_device_index()])
        acc.set_device_index("cuda:1")
        res.append(cuda.current_device())
        with acc.device_index(3):
            res.append(cuda.current_device())
        with acc.device_index(None):
            res.append(cuda.current_device())
        res.append(cuda.current_device())
        s = cuda.Stream(device=0)
        acc.set_stream(s)
        res.append([cuda.current_device(), acc.current_stream() is cuda.current_stream(), acc.current_stream(0) == s])
        acc.synchronize()
        acc.synchronize(2)
        res.append(acc.current_device_idx is acc.current_device_index)
        print(json.dumps(res))
    """, ACCEL_BACKEND=backend)
    assert out == [backend, True, "cuda", True, NDEV, 0, [2, 2], 1, 3, 1, 1, [0, True, True], True]


@pytest.mark.emu_only("ACCEL_EMU_DEVICES=0")
def test_mtia_accelerator_when_no_cuda_device(subprocess_python):
    out = run(subprocess_python, f"""
        import importlib.util, json
        import accel.accelerator as acc, accel.mtia as mtia
        spec = importlib.util.spec_from_file_location("mtia_fake", {MTIA_TESTS!r})
        m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
        res = [acc.is_available(), acc.current_accelerator(check_available=True), acc.device_count(),
               str(acc.current_accelerator())]   # a CUDA runtime without a device: torch's compiled-in case
        try:
            acc.current_device_index()
        except RuntimeError as e:
            res.append(str(e))
        mtia.register_backend(m.FakeRuntime(n=2))
        res.append([acc.is_available(), str(acc.current_accelerator()), acc.device_count()])
        acc.set_device_index(1)
        res.append([mtia.current_device(), acc.current_device_index()])
        with acc.device_index(0):
            res.append(mtia.current_device())
        res.append(mtia.current_device())
        s = mtia.Stream(device=0)
        acc.set_stream(s)
        res.append([acc.current_device_index(), acc.current_stream() is s])
        acc.synchronize()
        from accel import device_interface as di
        res.append(di.get_interface_for_device("mtia:1") is di.MtiaInterface)
        print(json.dumps(res))
    """, ACCEL_EMU_DEVICES="0")
    assert out[:4] == [False, None, 0, "cuda"]
    assert out[4].startswith("accel.accelerator: no accelerator is available")
    assert out[5:] == [[True, "mtia", 2], [1, 1], 0, 1, [0, True], True]


def test_no_accelerator_at_all(subprocess_python):
    out = run(subprocess_python, """
        import json, accel.accelerator as acc
        res = [acc.is_available(), acc.current_accelerator(), acc.current_accelerator(True), acc.device_count()]
        for call in (acc.current_device_index, acc.current_stream, acc.synchronize, lambda: acc.set_device_index(0)):
            try:
                call()
                res.append("no error")
            except RuntimeError as e:
                res.append(str(e))
        with acc.device_index(None):  # None: a no-op, even without an accelerator
            pass
        print(json.dumps(res))
    """, ACCEL_CUDART="/nonexistent/libcudart.so.13")
    assert out[:4] == [False, None, None, 0]
    assert all(msg.startswith("accel.accelerator: no accelerator is available") for msg in out[4:]), out


@pytest.mark.devices(3)
def test_device_index_reentered_restores_each_entry(subprocess_python, backend):
    # The same accel.accelerator.device_index re-entered while entered: each exit restores the device of
    # its own entry (as accel.cuda.device does).
    out = run(subprocess_python, """
        import json, accel.cuda as cuda
        import accel.accelerator as acc
        res = []
        cuda.set_device(2)
        g = acc.device_index(1)
        with g:
            cuda.set_device(0)
            with g:
                res.append([cuda.current_device(), g.prev_idx])
            res.append([cuda.current_device(), g.prev_idx])
        res.append([cuda.current_device(), g.prev_idx])
        print(json.dumps(res))
    """, ACCEL_BACKEND=backend)
    assert out == [[1, 0], [0, 2], [2, 2]]
