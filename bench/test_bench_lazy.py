"""accel.lazy hot paths, both twins in one run: Node construction, post_order and graph_hash per node
on 1e5-node DAGs with sharing (every node reachable; a tenth are device data with shared handles), and
the cost of building a 1e5-node wide DAG (every node on two random earlier ones), against the same loop
around a no-op call."""
import random

import pytest

from accel._python import _ir as python

try:
    from accel._native import _ir as native
except ImportError:          # a -Dnative=false install: python only
    native = None

TWINS = {"python": python} if native is None else {"native": native, "python": python}
N = 100_000


def _dag(ir, n=N, seed=0):
    rnd = random.Random(seed)
    s = ir.Shape(6, [2, 3])
    shapes = (s,)
    add, mul = ir.OpKind("aten::add"), ir.OpKind("aten::mul")
    outs = [ir.Output(ir.device_data(s, 0))]
    for i in range(1, n):
        if i % 10 == 0:
            outs.append(ir.Output(ir.device_data(s, rnd.randrange(1000))))
            continue
        far = outs[rnd.randrange(len(outs))] if rnd.random() < 0.5 else outs[max(0, len(outs) - 1 - rnd.randrange(16))]
        outs.append(ir.Output(ir.Node(add if i % 3 else mul, (outs[-1], far), shapes)))
    return outs[-1]


@pytest.fixture(scope="module")
def dags():
    return {name: _dag(ir) for name, ir in TWINS.items()}


def _noop():
    pass


@pytest.mark.benchmark(group="lazy Node(op, 2 operands, 1 shape)")
def test_noop_python_call(bench):
    bench(_noop)


@pytest.mark.benchmark(group="lazy Node(op, 2 operands, 1 shape)")
@pytest.mark.parametrize("twin", list(TWINS))
def test_node_construction(bench, twin):
    ir = TWINS[twin]
    s = ir.Shape(6, [2, 3])
    a = ir.Output(ir.device_data(s, 0))
    b = ir.Output(ir.Node("aten::neg", [a], [s]))
    k = ir.OpKind("aten::add")
    ops, shapes = [a, b], [s]
    bench(ir.Node, k, ops, shapes, iterations=200 if twin == "python" else 2000)


def _per_node(benchmark, fn, root, n, rounds):
    benchmark.extra_info["per"] = n
    benchmark.extra_info["unit"] = "node"
    benchmark.pedantic(fn, args=([root],), iterations=1, rounds=rounds, warmup_rounds=1)


@pytest.mark.benchmark(group="lazy build a 1e5-node DAG (Node + Output per node)")
@pytest.mark.parametrize("twin", list(TWINS))
def test_build_dag(benchmark, twin):
    benchmark.extra_info["per"] = N
    benchmark.extra_info["unit"] = "node"
    benchmark.pedantic(_dag, args=(TWINS[twin],), iterations=1, rounds=3, warmup_rounds=0)


@pytest.mark.benchmark(group="lazy post_order on a 1e5-node DAG")
@pytest.mark.parametrize("twin", list(TWINS))
def test_post_order(benchmark, dags, twin):
    ir, root = TWINS[twin], dags[twin]
    _per_node(benchmark, ir.post_order, root, ir.graph_size([root]), 30 if twin == "native" else 5)


@pytest.mark.benchmark(group="lazy graph_hash on a 1e5-node DAG")
@pytest.mark.parametrize("twin", list(TWINS))
def test_graph_hash(benchmark, dags, twin):
    ir, root = TWINS[twin], dags[twin]
    assert ir.graph_hash([root]) == TWINS["python"].graph_hash([dags["python"]])
    _per_node(benchmark, ir.graph_hash, root, ir.graph_size([root]), 30 if twin == "native" else 5)


@pytest.mark.benchmark(group="lazy graph_size on a 1e5-node DAG")
@pytest.mark.parametrize("twin", list(TWINS))
def test_graph_size(benchmark, dags, twin):
    ir, root = TWINS[twin], dags[twin]
    _per_node(benchmark, ir.graph_size, root, ir.graph_size([root]), 30 if twin == "native" else 5)


# -- building a wide DAG: 1e5 nodes, each on two random earlier nodes (1000 device-data leaves first), so
# operands are scattered over the whole graph built so far, as in a traced program.  The floor is the same
# loop calling a Python no-op with the same arguments: a node's own cost is its time minus the floor's.
WIDE_LEAVES = 1000
_rnd = random.Random(1)
PAIRS = [(_rnd.randrange(i), _rnd.randrange(i)) for i in range(WIDE_LEAVES, WIDE_LEAVES + N)]


def _noop3(op, operands, shapes):
    pass


def _leaves(ir):
    s = ir.Shape(6, [2, 3])
    return (ir, [ir.device_data(s, i) for i in range(WIDE_LEAVES)], ir.OpKind("aten::add"), [s]), {}


def _wide_floor(ir, nodes, k, shapes):
    app = nodes.append
    for a, b in PAIRS:
        app(_noop3(k, [nodes[a], nodes[b]], shapes))
    return nodes


def _wide_nodes(ir, nodes, k, shapes):
    app, node = nodes.append, ir.Node
    for a, b in PAIRS:
        app(node(k, [nodes[a], nodes[b]], shapes))
    return nodes                     # freed after the timer stops


def _wide_outputs(ir, nodes, k, shapes):
    app, node, output = nodes.append, ir.Node, ir.Output
    for a, b in PAIRS:
        app(node(k, [output(nodes[a]), output(nodes[b])], shapes))
    return nodes


def _wide(benchmark, twin, fn):
    benchmark.extra_info["per"] = N
    benchmark.extra_info["unit"] = "node"
    benchmark.pedantic(fn, setup=lambda: _leaves(TWINS[twin]), rounds=10 if twin == "native" else 3,
                       warmup_rounds=1)


@pytest.mark.benchmark(group="lazy build a 1e5-node wide DAG: Node(op, [a, b], [shape])")
def test_wide_dag_floor(benchmark):
    _wide(benchmark, "python", _wide_floor)


@pytest.mark.benchmark(group="lazy build a 1e5-node wide DAG: Node(op, [a, b], [shape])")
@pytest.mark.parametrize("twin", list(TWINS))
def test_wide_dag_node_operands(benchmark, twin):
    _wide(benchmark, twin, _wide_nodes)


@pytest.mark.benchmark(group="lazy build a 1e5-node wide DAG: Node(op, [a, b], [shape])")
@pytest.mark.parametrize("twin", list(TWINS))
def test_wide_dag_output_operands(benchmark, twin):
    _wide(benchmark, twin, _wide_outputs)
