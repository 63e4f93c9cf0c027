"""accel.lazy argument checks on both twins: one check (same type, same message) for the roots of every graph
function, for operand and output indices, for num_outputs, and Nodes given directly as operands."""
import numpy as np
import pytest

import accel.lazy as lazy
from accel.lazy import dump


def _err(fn, *args):
    try:
        fn(*args)
    except Exception as e:                  # the point is to compare whatever each call raises
        return type(e).__name__, str(e)
    return None


MAX_OUTPUTS = 2**31 - 1


@pytest.mark.parametrize("n,exc,msg", [
    (2**63, ValueError, f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got {2**63}"),
    (2**31, ValueError, f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got {2**31}"),
    (-2**70, ValueError, f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got {-2**70}"),
    (0, ValueError, f"Node num_outputs must be in [1, {MAX_OUTPUTS}], got 0"),
    (True, TypeError, "Node num_outputs must be an int, got bool: True"),
    (2.0, TypeError, "Node num_outputs must be an int, got float: 2.0"),
    (None, TypeError, "Node num_outputs must be an int, got NoneType: None"),
])
def test_num_outputs_range(ir, n, exc, msg):
    s = ir.Shape(6, [2])
    with pytest.raises(exc) as ei:
        ir.Node("aten::x", [], [s], n)
    assert str(ei.value) == msg


def test_num_outputs_limits_accepted(ir):
    s = ir.Shape(6, [2])
    big = ir.Node("aten::x", [], [s], MAX_OUTPUTS)
    assert big.num_outputs == MAX_OUTPUTS and ir.Output(big, MAX_OUTPUTS - 1).index == MAX_OUTPUTS - 1
    assert ir.Node("aten::x", [], [s], np.int64(3)).num_outputs == 3     # any __index__ int, as indices


_OBJ = object()


def _bad_roots(ir):
    s = ir.Shape(6, [2])
    n = ir.Node("aten::x", [], [s])
    return n, [None, 5, "ab", b"ab", s, [n, None], (ir.Output(n), 5), [s], {"a": 1}.values(), _OBJ]


def test_roots_checked_alike_by_every_graph_function(ir):
    n, bad = _bad_roots(ir)
    fns = [ir.post_order, ir.graph_size, ir.parameter_sequence, ir.graph_hash, lazy.to_text, lazy.to_dot]
    for roots in bad:
        want = _err(ir.post_order, roots)
        assert want is not None and want[0] == "TypeError", roots
        assert want[1].startswith(("roots must be a sequence of Output or Node objects, got ", "roots[")), want
        for fn in fns:
            assert _err(fn, roots) == want, (fn.__name__, roots)


def test_roots_errors_identical_across_twins(both_twins):
    got = []
    for t in both_twins:
        ir = t.mod("_ir")
        n, bad = _bad_roots(ir)
        got.append([_err(fn, r).__repr__().replace(repr(n), "<n>")
                    for r in bad for fn in (ir.post_order, ir.graph_hash, dump.to_text)])
    assert got[0] == got[1]


@pytest.mark.parametrize("index,what", [(True, "bool: True"), (1.0, "float: 1.0"), ("0", "str: '0'"),
                                        (None, "NoneType: None")])
def test_indices_checked_alike(ir, index, what):
    s = ir.Shape(6, [2])
    a, b = ir.Node("aten::a", [], [s], 2), ir.Node("aten::b", [], [s])
    n = ir.Node("aten::n", [ir.Output(a), b], [s])
    assert _err(ir.Output, a, index) == ("TypeError", f"Output index must be an int, got {what}")
    assert _err(n.replace_operand, index, ir.Output(b)) == (
        "TypeError", f"replace_operand index must be an int, got {what}")
    assert n.operands == (ir.Output(a), ir.Output(b))        # nothing changed


def test_index_ranges(ir):
    s = ir.Shape(6, [2])
    a, b = ir.Node("aten::a", [], [s], 2), ir.Node("aten::b", [], [s])
    n = ir.Node("aten::n", [ir.Output(a), b], [s])
    for i in (-1, 2, 2**64):
        assert _err(n.replace_operand, i, b) == (
            "IndexError", f"operand index {i} out of range for a node with 2 operand(s)")
    assert _err(ir.Output, a, 2**64) == (
        "IndexError", f"Output index {2**64} out of range for a node with 2 output(s): {a}")
    n.replace_operand(np.int64(1), ir.Output(a, 1))
    assert n.operands == (ir.Output(a), ir.Output(a, 1))
    n.replace_operand(1, a)
    assert n.operands == (ir.Output(a), ir.Output(a)) and [o.index for o in n.operands] == [0, 0]
    assert _err(n.replace_operand, 0, 5) == ("TypeError", "replace_operand needs an Output or a Node, got int: 5")


# -- a Node given as an operand means its output 0 (LTC's Value(node))

def test_node_operand_is_output_0(ir):
    s = ir.Shape(6, [2, 3])
    a = ir.device_data(s, "a")
    m = ir.Node("test::split", [a], [s, s], 2)
    b = ir.Node("aten::neg", [ir.Output(a)], [s])
    for dyn in (False, True):
        prev = ir.set_dynamic_shapes(dyn)
        try:
            x = ir.Node("aten::add", [a, ir.Output(b), None, m], [s])
            y = ir.Node("aten::add", [ir.Output(a), ir.Output(b), None, ir.Output(m, 0)], [s])
        finally:
            ir.set_dynamic_shapes(prev)
        assert (x.hash, x.shape_hash) == (y.hash, y.shape_hash)
        assert x.operands == y.operands == (ir.Output(a), ir.Output(b), ir.Output(m))
        assert [o.node for o in x.operands] == [a, b, m] and [o.index for o in x.operands] == [0, 0, 0]
        assert ir.graph_hash(x) == ir.graph_hash(y) and ir.parameter_sequence(x) == [0]
        assert [str(n) for n in ir.post_order(x)] == [str(n) for n in ir.post_order(y)]
    z = ir.Node("aten::mul", [ir.Output(m, 1), m], [s])
    assert z.operands == (ir.Output(m, 1), ir.Output(m, 0))
    assert z.hash == ir.Node("aten::mul", [ir.Output(m, 1), ir.Output(m, 0)], [s]).hash
    z.replace_operand(0, b)
    assert z.operands == (ir.Output(b), ir.Output(m)) and z.operands[0].node is b
    assert lazy.to_text(z).splitlines()[-2].endswith("aten::mul(%2, %1.0), ROOT=0")


def test_operand_errors(ir):
    s = ir.Shape(6, [2])
    n = ir.Node("aten::x", [], [s])
    assert _err(ir.Node, "aten::y", [n, 5], [s]) == (
        "TypeError", "Node operands[1] must be an Output, a Node or None, got int: 5")
    assert _err(ir.Node, "aten::y", [s], [s]) == (
        "TypeError", "Node operands[0] must be an Output, a Node or None, got Shape: Shape(6, [2])")
    assert _err(ir.Node, "aten::y", n, [s]) == (
        "TypeError", f"Node operands must be a sequence of Output, Node or None, got Node: <Node {n}>")


def test_node_operand_twins_identical(both_twins):
    got = []
    for t in both_twins:
        ir = t.mod("_ir")
        s = ir.Shape(6, [4])
        nodes = [ir.device_data(s, i % 3) for i in range(4)]
        for i in range(200):
            a, b = nodes[(i * 7) % len(nodes)], nodes[(i * 13 + 5) % len(nodes)]
            nodes.append(ir.Node("aten::add" if i % 2 else "aten::mul", [a, ir.Output(b)] if i % 3 else [a, b], [s]))
        got.append((ir.graph_hash(nodes[-1]), [n.hash for n in nodes], ir.parameter_sequence(nodes[-1])))
    assert got[0] == got[1]
