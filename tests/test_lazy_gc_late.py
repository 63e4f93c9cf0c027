"""Cycles closed after the fact, on both twins: a node that may be on a reference cycle only once other nodes
(and Outputs) were built on it — a later set_data(handle), replace_operand with an operand that may cycle, a
Shape subclass added by add_computed_shape — and whose new handle, operand or shape refers back to those
earlier users.  The garbage collector must free all of it (the native twin tracks nodes only when they may
cycle, so the earlier users must become tracked then too)."""
import gc
import weakref

import pytest


class Ref:
    """A handle that refers back into the graph (hashable by identity)."""
    def __init__(self, to=None):
        self.to = to


def _users(ir, a):
    """Nodes and Outputs built on a before it may cycle: a chain, a diamond, a seeded multi-output node."""
    s = ir.Shape(6, [2])
    b = ir.Node("aten::neg", [a], [s])
    c = ir.Node("aten::add", [ir.Output(b), a], [s])
    z = ir.Node("test::multi", [c, b], [s, s], 2, 5)
    w = ir.Node("aten::neg", [ir.Output(z, 1)], [s])
    return {"b": b, "c": c, "z": z, "w": w, "out_a": ir.Output(a), "out_b": ir.Output(b),
            "out_z1": ir.Output(z, 1), "operands": w.operands}


def _late(ir, how, target):
    """A node made to refer (late) to whatever target(users) returns; returns (node, users)."""
    s = ir.Shape(6, [2])
    if how == "set_data":
        a = ir.device_data(s, 0)
        users = _users(ir, a)
        a.set_data(Ref(target(users)))
    elif how == "replace_operand":
        a = ir.Node("aten::relu", [ir.device_data(s, 1)], [s])
        users = _users(ir, a)
        a.replace_operand(0, ir.device_data(s, Ref(target(users))))
    elif how == "replace_operand_deep":             # the tracked operand is itself a user of a tracked node
        a = ir.Node("aten::relu", [ir.device_data(s, 1)], [s])
        users = _users(ir, a)
        t = ir.Node("aten::abs", [ir.device_data(s, Ref(target(users)))], [s])
        a.replace_operand(0, ir.Output(t))
    else:                                           # add_computed_shape with a Shape subclass
        class MyShape(ir.Shape):
            pass
        a = ir.Node("aten::relu", [ir.device_data(s, 1)], [s])
        users = _users(ir, a)
        t = MyShape(6, [2])
        a.add_computed_shape(t)
        t.to = target(users)
    return a, users


TARGETS = {
    "user": lambda u: u["b"],
    "user_of_user": lambda u: u["w"],
    "output_of_self": lambda u: u["out_a"],
    "output_of_user": lambda u: u["out_b"],
    "multi_output": lambda u: [u["out_z1"]],
    "operands_tuple": lambda u: u["operands"],
    "everything": lambda u: dict(u),
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize("how", ["set_data", "replace_operand", "replace_operand_deep", "add_computed_shape"])
def test_late_cycles_are_collected(ir, how, target):
    a, users = _late(ir, how, TARGETS[target])
    # (Outputs take no weak references, but a live Output keeps its node alive)
    refs = [weakref.ref(a)] + [weakref.ref(v) for v in users.values() if isinstance(v, ir.Node)]
    del a, users
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


def test_late_cycle_through_an_emission_map_is_collected(ir):
    # an EmissionMap remembers the nodes it emitted: a handle holding one refers back to them
    s = ir.Shape(6, [2])
    a = ir.device_data(s, 0)
    b = ir.Node("aten::neg", [a], [s])
    emap = ir.EmissionMap()
    ir.post_order([b], emap)
    a.set_data(Ref(emap))
    refs = [weakref.ref(a), weakref.ref(b), weakref.ref(emap)]
    del a, b, emap
    gc.collect()
    assert [r() for r in refs] == [None] * 3


def test_late_cycle_through_recycled_slots_is_collected(ir):
    # users built after earlier graphs were freed can sit below their operands in the native arena (slots
    # are reused lowest first): a long chain whose nodes alternate between low and high slots
    s = ir.Shape(6, [2])
    keep = []
    free = [ir.Node("t::tmp", [], [s]) for _ in range(200)]
    a = ir.device_data(s, 0)
    chain = [a]
    for i in range(200):
        keep.append(ir.Node("t::pad", [], [s]))        # takes a high slot while the low ones are in use
        if i % 2:
            del free[:1]                                 # frees a low slot for the next user
        chain.append(ir.Node("t::u", [chain[-1]], [s]))
    del free
    a.set_data(Ref(chain[-1]))
    refs = [weakref.ref(n) for n in chain]
    del a, chain
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)
    assert len(keep) == 200


def test_late_tracking_reaches_only_users(twin):
    # the native twin makes exactly the earlier users (and their Outputs) tracked, nothing else
    if twin.name != "native":
        pytest.skip("only the compiled twin leaves nodes untracked")
    ir = twin.mod("_ir")
    s = ir.Shape(6, [2])
    a = ir.device_data(s, 0)
    other = ir.device_data(s, 1)
    b = ir.Node("aten::neg", [a, other], [s])
    c = ir.Node("aten::neg", [b], [s])
    side = ir.Node("aten::neg", [other], [s])
    dropped = [ir.Output(v) for v in (side, other, a) for _ in range(100)]
    outs = [ir.Output(v) for v in (a, b, c, other, side)]
    del dropped[::2]                    # Outputs come and go before and after the late tracking
    outs += [ir.Output(v) for v in (side, other, c, b, a)]
    assert not any(gc.is_tracked(v) for v in [a, b, c, other, side] + outs + dropped)
    a.set_data(Ref())
    assert [gc.is_tracked(v) for v in (a, b, c, other, side)] == [True, True, True, False, False]
    assert [gc.is_tracked(o) for o in outs] == [True, True, True, False, False, False, False, True, True, True]
    assert [gc.is_tracked(o) for o in dropped] == [o.node is a for o in dropped]
    del dropped
    assert [gc.is_tracked(o) for o in (ir.Output(a), ir.Output(other))] == [True, False]
    other.set_data(Ref())
    assert all(gc.is_tracked(v) for v in [a, b, c, other, side] + outs)


ATTEMPT = """
class Ref:
    def __init__(self, to=None):
        self.to = to

s = ir.Shape(6, [2])
leaf = ir.device_data(s, 0)


def attempt(i):
    a = ir.device_data(s, 0)
    b = ir.Node("aten::neg", [a, leaf], [s])
    ob = ir.Output(b)
    a.set_data(Ref([b, ob]))                          # a -> handle -> b, Output(b) -> a
    x = ir.Node("aten::relu", [leaf], [s])
    y = ir.Node("aten::add", [x, leaf], [s])
    ox = ir.Output(x)
    x.replace_operand(0, ir.device_data(s, Ref((y, ox))))   # x -> data -> handle -> y, Output(x) -> x
"""


def test_late_cycles_leave_rss_flat(twin, rss_growth):
    n = 100_000
    grown = rss_growth(twin, ATTEMPT, n)
    # 1e5 leaked attempts would hold 1e5 x (5 nodes, 2 Outputs, 2 handles, their dicts) > 80 MB
    assert grown < 4 * 2**20, f"RSS grew by {grown / 2**20:.1f} MiB over {n} attempts"
