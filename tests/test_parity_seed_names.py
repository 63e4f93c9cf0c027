"""docs/seed_names.md: every "same" row names an accel object that exists, on both twins where the name
is one of the twin modules' (accel.cuda.Stream is accel._native._stream.Stream or accel._python._stream.Stream)."""
import importlib
import pathlib
import re

import pytest

from accel import _impl

TABLE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "seed_names.md"
STATUSES = {"same", "shape", "n/a", "—"}
_ROW = re.compile(r"^\|(?P<torch>[^|]*)\|(?P<accel>[^|]*)\|(?P<status>[^|]*)\|(?P<note>[^|]*)\|\s*$")


def _rows():
    rows = []
    for line in TABLE.read_text().splitlines():
        m = _ROW.match(line)
        if not m or set(m["status"].strip()) <= {"-"} or m["status"].strip() == "status":
            continue
        rows.append((m["torch"].strip(), m["accel"].strip().strip("`"), m["status"].strip()))
    return rows


ROWS = _rows()
SAME = [(t, a) for t, a, s in ROWS if s == "same"]


def test_table_is_well_formed():
    assert len(ROWS) > 200 and len(SAME) > 120
    for torch_name, accel_path, status in ROWS:
        assert status in STATUSES, (torch_name, status)
        if status == "same":
            assert accel_path.startswith("accel."), torch_name


def _resolve(path):
    parts = path.split(".")
    for i in range(len(parts), 0, -1):  # the longest importable module prefix
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for name in parts[i:]:
            obj = getattr(obj, name)
        return obj, parts[i:]
    raise ImportError(path)


def _twin_homes(attrs):
    """(twin module name, attribute chain) when ``attrs[0]`` of accel.cuda is a twin module's object."""
    import accel.cuda
    top = getattr(accel.cuda, attrs[0])
    for mod in ("_stream", "_device"):
        if getattr(_impl.module(mod), attrs[0], None) is top:
            return mod
    return None


@pytest.mark.parametrize("torch_name, accel_path", SAME, ids=[a for _, a in SAME])
def test_same_rows_exist(torch_name, accel_path, twin):
    _, attrs = _resolve(accel_path)  # AttributeError / ImportError: the row is wrong
    if accel_path.startswith("accel.cuda.") and attrs:
        mod = _twin_homes(attrs)
        if mod is not None:
            target = twin.mod(mod)
            for name in attrs:
                target = getattr(target, name)
