"""The RSS-growth check shared by the lazy IR cycle tests (loaded by path: the suite runs with
--import-mode=importlib, so test modules cannot import each other)."""

_SCRIPT = """
import gc
from accel.{pkg} import _ir as ir

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
{body}
for i in range(10_000):
    attempt(i)
gc.collect()
base = rss()
for i in range({n}):
    attempt(i)
gc.collect()
print(rss() - base)
"""


def rss_growth(run, twin, body, n):
    """Bytes the RSS grew by over ``n`` calls of ``attempt(i)`` (defined by ``body``, which sees ``gc`` and
    ``ir``, the twin's _ir) after 10 000 warm-up calls, each run then collected; ``run`` is the
    subprocess_python fixture."""
    r = run(_SCRIPT.format(pkg=twin.package.split(".")[1], body=body, n=n), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return int(r.stdout)
