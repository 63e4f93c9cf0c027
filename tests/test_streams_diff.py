"""Differential test: random sequences of stream-state operations give the same observable state on
both twins (current device, which stream is current on every device, context nesting)."""
import contextlib
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

NDEV = int(os.environ["ACCEL_TEST_DEVICE_COUNT"])   # the runtime's devices (conftest: 4 on the emulator)

OPS = st.lists(st.one_of(
    st.tuples(st.just("set_stream"), st.integers(0, 7)),
    st.tuples(st.just("enter"), st.integers(0, 7)),
    st.tuples(st.just("exit"), st.just(0)),
    st.tuples(st.just("set_device"), st.integers(0, max(NDEV, 1) - 1)),
    st.tuples(st.just("guard"), st.integers(0, max(NDEV, 1) - 1)),
    st.tuples(st.just("enter_stream_object"), st.integers(0, 7)),
), max_size=40)


def _run(twin, ops):
    sm, dev = twin.mod("_stream"), twin.mod("_device")
    dev.set_device(0)
    for d in range(NDEV):
        sm.set_stream(sm.default_stream(d))
    dev.set_device(0)
    pool = [sm.Stream(device=i % NDEV) for i in range(8)]
    names = {s: f"s{i}" for i, s in enumerate(pool)}
    names.update({sm.default_stream(d): f"default{d}" for d in range(NDEV)})
    trace = []
    with contextlib.ExitStack() as stack:
        for op, arg in ops:
            try:
                if op == "set_stream":
                    sm.set_stream(pool[arg])
                elif op == "enter":
                    stack.enter_context(sm.stream(pool[arg]))
                elif op == "exit":
                    stack.close()
                elif op == "set_device":
                    dev.set_device(arg)
                elif op == "guard":
                    stack.enter_context(dev.device(arg))
                else:
                    stack.enter_context(pool[arg])
                outcome = "ok"
            except RuntimeError as exc:
                outcome = str(exc)
            trace.append((op, arg, outcome, dev.current_device(),
                          tuple(names[sm.current_stream(d)] for d in range(NDEV))))
    trace.append(("end", dev.current_device(), tuple(names[sm.current_stream(d)] for d in range(NDEV))))
    dev.set_device(0)
    for d in range(NDEV):
        sm.set_stream(sm.default_stream(d))
    dev.set_device(0)
    return trace


@pytest.mark.devices(1)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_twins_agree_on_stream_state(both_twins, ops):
    native, python = both_twins
    assert _run(native, ops) == _run(python, ops)
