"""List the CUDA runtime symbols a torch wheel's libraries import, as accel/_emu/torch_cudart*_imports.txt.

Reads every shared library under torch/lib/ of the wheel (one at a time, extracted to a temporary
directory) with ``readelf --dyn-syms -W`` (binutils) and prints the union of the undefined dynamic
symbols bound to the version node SONAME, one ``name@SONAME`` per line, sorted, under a header naming
the wheel.  The wheel itself is only read.

    python tools/cudart_imports.py torch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl \
        [--soname libcudart.so.12] [-o accel/_emu/torch_cudart12_imports.txt]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import zipfile

LIBRARY = re.compile(r"^torch/lib/[^/]+\.so(\.[0-9]+)*$")


def undefined_versioned(path, soname):
    """Names of the undefined dynamic symbols of the ELF file `path` bound to version `soname`."""
    out = subprocess.run(["readelf", "--dyn-syms", "-W", path], capture_output=True, text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        fields = line.split()
        # Num: Value Size Type Bind Vis Ndx Name [(verindex)]
        if len(fields) >= 8 and fields[6] == "UND" and fields[7].endswith("@" + soname):
            names.add(fields[7].split("@")[0])
    return names


def wheel_imports(wheel, soname):
    """{library member name: imported names} for the libraries of `wheel` that import from `soname`."""
    found = {}
    with zipfile.ZipFile(wheel) as zf, tempfile.TemporaryDirectory() as tmp:
        for member in zf.namelist():
            if not LIBRARY.match(member):
                continue
            path = zf.extract(member, tmp)
            try:
                names = undefined_versioned(path, soname)
            finally:
                os.remove(path)
            if names:
                found[member] = names
    return found


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wheel", help="a torch wheel (.whl) built against the CUDA runtime SONAME")
    ap.add_argument("--soname", default="libcudart.so.12", help="the runtime's soname / version node")
    ap.add_argument("-o", "--output", help="write the list here (default: stdout)")
    args = ap.parse_args(argv)
    found = wheel_imports(args.wheel, args.soname)
    if not found:
        sys.exit(f"{args.wheel}: no library under torch/lib/ imports symbols of version {args.soname}")
    names = sorted(set().union(*found.values()))
    header = [f"# Runtime symbols (version {args.soname}) imported by the CUDA libraries of",
              f"# {os.path.basename(args.wheel)}: {', '.join(sorted(os.path.basename(m) for m in found))}.",
              f"# {len(names)} names; produced by tools/cudart_imports.py."]
    text = "\n".join(header + [f"{n}@{args.soname}" for n in names]) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
