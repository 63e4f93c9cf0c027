"""Writes tests/data/driver_surface.txt: every driver API entry point that cuda.bindings' driver module
offers (the names it resolves through cuGetProcAddress, one a line, sorted), with the cuda-bindings version
and the CUDA version it asks for in the header.  tests/test_emu_driver_surface.py counts how many of them
the libcuda.so.1 stand-in implements.

Run with cuda-bindings installed (an oracle, never a dependency of accel):
    pip install cuda-bindings && python tools/driver_surface.py
"""
import importlib.metadata
import pathlib
import re

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "data" / "driver_surface.txt"


def surface():
    from cuda.bindings import driver
    names = sorted(n for n in dir(driver) if re.fullmatch(r"cu[A-Z]\w*", n) and callable(getattr(driver, n)))
    return names, int(driver.CUDA_VERSION)


def main():
    names, version = surface()
    head = [f"# cuda-bindings {importlib.metadata.version('cuda-bindings')}: cuda.bindings.driver's entry points "
            f"({len(names)}), asked for with CUDA version",
            f"version {version}",
            "# written by tools/driver_surface.py"]
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text("\n".join(head + names) + "\n")
    print(f"{len(names)} names, CUDA {version} -> {OUT}")


if __name__ == "__main__":
    main()
