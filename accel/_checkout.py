"""What importing accel from its unbuilt checkout does (accel/_impl.py calls ``unbuilt()`` when the
build's generated ``_build_config`` is missing, which happens only in a source tree).

``python -m accel ...`` typed in the checkout's root (where the README's install-and-run line is typed)
imports the source tree, because ``-m`` puts the current directory first on ``sys.path``. When accel is
installed in this interpreter, that command is handed off to the installed build: the process
re-executes itself (same interpreter, same interpreter options, same arguments) with the checkout taken
off ``sys.path``, so it does exactly what it does from any other directory. Everything else (``import
accel`` in a program or REPL started in the checkout, or no installed build) raises ImportError saying
exactly what to type instead.
"""
import importlib.machinery
import os
import subprocess
import sys

# The re-executed interpreter: argv[1] is the checkout to leave off sys.path, argv[2] the module to run.
_CHILD = ("import os, runpy, sys\n"
          "root = sys.argv.pop(1)\n"
          "sys.path[:] = [p for p in sys.path if os.path.realpath(p or os.curdir) != root]\n"
          "runpy.run_module(sys.argv.pop(1), run_name='__main__', alter_sys=True)\n")


def _running_module():
    """The module name of ``python -m NAME`` when this import happens while ``-m`` is locating NAME,
    else None (runpy's launcher frame, whose signature has been ``_run_module_as_main(mod_name, ...)``
    since Python 2.7, names it)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_run_module_as_main" and frame.f_globals.get("__name__") == "runpy":
            name = frame.f_locals.get("mod_name")
            return name if isinstance(name, str) else None
        frame = frame.f_back
    return None


def _installed(root):
    """The directory of a built accel on sys.path once the checkout ``root`` is left off it, or None."""
    path = [p for p in sys.path if os.path.realpath(p or os.curdir) != root]
    spec = importlib.machinery.PathFinder.find_spec("accel", path)
    where = spec and spec.submodule_search_locations and list(spec.submodule_search_locations)[0]
    if where and os.path.exists(os.path.join(where, "_build_config.py")):
        return where
    return None


def unbuilt():
    """Hand ``python -m accel...`` off to the installed build (never returns), or the ImportError to raise,
    saying what to type instead."""
    tree = os.path.dirname(os.path.abspath(__file__))
    root = os.path.realpath(os.path.dirname(tree))
    installed = _installed(root)
    module = _running_module()
    if installed and module and (module == "accel" or module.startswith("accel.")):
        argv = [sys.executable, *subprocess._args_from_interpreter_flags(), "-c", _CHILD, root, module,
                *sys.argv[1:]]
        sys.stdout.flush()
        sys.stderr.flush()
        if os.name == "posix":
            os.execv(sys.executable, argv)
        raise SystemExit(subprocess.call(argv))
    if installed:
        hint = (f"accel is installed ({installed}); run your program from another directory (e.g. `cd ~`), "
                "or use the `accel` command (`accel --help`)")
    else:
        hint = (f"accel is not installed in this interpreter ({sys.executable}): run "
                f"`{sys.executable} -m pip install {root}`, then `accel` (or `python -m accel`)")
    return ImportError(f"accel is being imported from its unbuilt source tree ({tree}), which is first on "
                      f"sys.path (the current directory is the checkout, or it is on PYTHONPATH): {hint}")
