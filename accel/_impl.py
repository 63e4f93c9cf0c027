"""THE one place that picks the implementation, once, at import (SPEC 1.1).

``ACCEL_BACKEND=auto`` (default): the compiled ``accel._native`` modules if they import, else the
``accel._python`` twins.  ``native``: the compiled modules or a loud ImportError.  ``python``: always
the twins.  Nobody else imports ``_native`` / ``_python`` (tests and benchmarks excepted).
"""
import importlib
import os

try:
    from accel import _build_config
except ImportError:  # only in an unbuilt checkout: hand `python -m accel` off to the installed build, or say why not
    from accel import _checkout
    raise _checkout.unbuilt() from None

# The twin modules; both packages define every one of them with the same public surface.
MODULES = ("_cudart", "_device", "_hash", "_ir", "_kernels", "_lazy_trace", "_memory", "_stream")
# Those imported when first asked for (from the package selected here): accel.lazy's kernels need numpy,
# which ``import accel`` does not load.
ON_DEMAND = ("_kernels",)

_requested = os.environ.get("ACCEL_BACKEND", "auto").strip().lower() or "auto"
if _requested not in ("auto", "native", "python"):
    raise ImportError(f"ACCEL_BACKEND={_requested!r} is not valid: expected 'auto', 'native' or 'python'")


def _import_all(package):
    return {name: importlib.import_module(f"accel.{package}.{name}") for name in MODULES if name not in ON_DEMAND}


def _select():
    if _requested == "python":
        return "python", "ACCEL_BACKEND=python", _import_all("_python")
    try:
        mods = _import_all("_native")
    except ImportError as exc:
        if not _build_config.NATIVE:
            cause = "this install was built with -Dnative=false (no compiled modules)"
        else:
            cause = f"the compiled modules failed to import: {exc}"
        if _requested == "native":
            raise ImportError(f"ACCEL_BACKEND=native was requested but {cause}") from exc
        return "python", f"ACCEL_BACKEND=auto and {cause}", _import_all("_python")
    why = "ACCEL_BACKEND=native" if _requested == "native" else "ACCEL_BACKEND=auto and the compiled modules imported"
    return "native", why, mods


backend, reason, _modules = _select()


def module(name):
    """The selected twin of ``name`` (one of MODULES)."""
    mod = _modules.get(name)
    if mod is None:
        if name not in ON_DEMAND:
            raise KeyError(f"{name!r} is not one of accel's twin modules {MODULES}")
        mod = _modules[name] = importlib.import_module(f"accel._{backend}.{name}")
    return mod


cudart = _modules["_cudart"]
