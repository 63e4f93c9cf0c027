"""Counts and first causes of another project's test suite run under `python -m accel emu`.

Reads what tools/peer_suites/run_*.sh left in their output folder: unittest verbose logs (``*.log``,
numba-cuda's ``numba.runtests -v``) or pytest JUnit XML files (``*.xml``, cuda.core / cuda.bindings), one per
test module, and prints the pass / fail / error / skip counts and each failing test's first cause, as
/work/shared/reference/kernels_on_emulator.md §6.3 classes them:

  a  kernel execution: the failure happens compiling, linking, loading or launching device code (a load,
     link or launch entry point in the traceback, a kernel-execution error code, nvJitLink's error);
  b  an entry point the stand-ins lack (CUDA_ERROR_NOT_SUPPORTED / cudaErrorNotSupported elsewhere);
  c  an entry point that answers differently from the driver (anything else: assertions, other codes);
  d  environment (a module or file the test needs is missing, a private export table, a timeout);
  v  version skew between the test tree and the wheels (a name one has and the other lacks).

A report is tested against v, d, a, b in this order; the first class it matches is its cause, else c.
Usage: python classify.py OUTDIR [--json FILE]
"""
import collections
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

# (class, pattern): searched in the whole report (message and traceback)
RULES = [
    ("v", re.compile(r"AttributeError: module 'cuda\.[\w.]+' has no attribute|cannot import name '\w+' from "
                     r"'cuda\.|test_package_contents|unexpected keyword argument '\w+'")),
    ("d", re.compile(r"ModuleNotFoundError|No module named|FileNotFoundError|No such file or directory|"
                     r"Skipped: could not import|cuGetExportTable|TIMEOUT \(the module ran past")),
    ("a", re.compile(r"cuLibraryLoad|cuModuleLoad|cuLibraryGetKernel|cuModuleGetFunction|cuLaunch|cuLink|"
                     r"cuKernelGet|cuFuncGet|cuOccupancy|_lazy_load_module|load_module_image|_module_finalizer|"
                     r"get_kernel|_launcher|\blaunch\(|nvJitLink|LinkerError|cudaLaunchKernel|"
                     r"CUDA_ERROR_(NO_BINARY_FOR_GPU|INVALID_PTX|INVALID_IMAGE|ILLEGAL_ADDRESS|LAUNCH_FAILED|"
                     r"ILLEGAL_INSTRUCTION|MISALIGNED_ADDRESS|LAUNCH_TIMEOUT|LAUNCH_OUT_OF_RESOURCES)|"
                     r"cudaErrorNoKernelImageForDevice|cudaErrorLaunchFailure|cudaErrorIllegalAddress")),
    ("b", re.compile(r"CUDA_ERROR_NOT_SUPPORTED|cudaErrorNotSupported|operation not supported")),
]
CLASSES = ("a", "b", "c", "d", "v")


def first_cause(report):
    for cls, pattern in RULES:
        if pattern.search(report):
            return cls
    return "c"


def last_error_line(report):
    """The exception line of a report (its last line naming an exception), shortened."""
    lines = [ln.strip() for ln in report.splitlines() if re.match(r"\s*(E\s+)?[\w.]+(Error|Exception|Exit)\b", ln)
             or re.match(r"\s*[\w.]+Error:", ln)]
    line = lines[-1] if lines else (report.strip().splitlines() or ["(no message)"])[-1].strip()
    return re.sub(r"^E\s+", "", line)[:160]


# ---------------------------------------------------------------- unittest verbose logs (numba.runtests -v)

START = re.compile(r"^(test\w*) \(([\w.]+)\)", re.M)
OUTCOME = re.compile(r" \.\.\. (ok|FAIL|ERROR|skipped|expected failure|unexpected success)\b")
OUTCOMES = {"ok": "passed", "FAIL": "failed", "ERROR": "error", "skipped": "skipped", "expected failure": "xfailed",
            "unexpected success": "failed"}


def test_id(method, described):
    """unittest's description names Class.method after the module (Python >= 3.11) or the class only."""
    return described if described.endswith("." + method) else f"{described}.{method}"


def read_unittest(path):
    text = open(path, errors="replace").read()
    results = {}
    starts = list(START.finditer(text))
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        outcome = OUTCOME.search(text, m.end(), end)    # output a test printed may come before it
        if outcome:
            results[test_id(m.group(1), m.group(2))] = OUTCOMES[outcome.group(1)]
    reports = {}
    for block in re.split(r"^={70}$", text, flags=re.M)[1:]:
        head = re.match(r"\s*(FAIL|ERROR): (\S+) \(([\w.]+)\)", block)
        if head:
            reports[test_id(head.group(2), head.group(3))] = block.split("\n" + "-" * 70 + "\nRan ")[0]
    for name in reports:        # setUpClass / setUpModule errors have a report and no result line
        results.setdefault(name, "error")
    ran = re.search(r"^Ran (\d+) tests? in", text, re.M)
    name = os.path.basename(path)[:-4]
    if not ran and re.search(r"^Skipped: .*\Z", text.strip(), re.M | re.S) and "TIMEOUT" not in text[-2000:]:
        results[name] = "skipped"       # the module skipped itself at import (e.g. pytest.importorskip)
    elif not ran:   # the process died or timed out before its report: the module counts as one error
        why = "TIMEOUT (the module ran past its time limit)" if "TIMEOUT" in text[-2000:] else text[-1500:]
        results[name] = "error"
        reports[name] = why
    return results, reports


# ---------------------------------------------------------------- pytest JUnit XML

def read_junit(path):
    results, reports = {}, {}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError:
        name = os.path.basename(path)[:-4]
        log = path[:-4] + ".log"
        tail = open(log, errors="replace").read()[-1500:] if os.path.exists(log) else "no report"
        return {name: "error"}, {name: tail}
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed" if child.tag == "failure" else "error"
                reports[name] = (child.get("message") or "") + "\n" + (child.text or "")
            elif child.tag == "skipped":
                outcome = "xfailed" if (child.get("type") or "").endswith("xfail") else "skipped"
        results[name] = outcome
    return results, reports


def classify(outdir):
    modules = {}
    for entry in sorted(os.listdir(outdir)):
        path = os.path.join(outdir, entry)
        if entry.endswith(".xml"):
            modules[entry[:-4]] = read_junit(path)
        elif entry.endswith(".log") and not os.path.exists(path[:-4] + ".xml"):
            modules[entry[:-4]] = read_unittest(path)
    counts = collections.Counter()
    causes = collections.Counter()
    lines = {c: collections.Counter() for c in CLASSES}
    per_module = {}
    failures = []
    for module, (results, reports) in modules.items():
        mc = collections.Counter(results.values())
        counts.update(mc)
        per_module[module] = dict(mc)
        for name, outcome in results.items():
            if outcome in ("failed", "error"):
                report = reports.get(name, "")
                cls = first_cause(report)
                causes[cls] += 1
                lines[cls][last_error_line(report)] += 1
                failures.append((name, cls, last_error_line(report)))
    return {"ran": sum(counts.values()), "counts": dict(counts), "causes": {c: causes[c] for c in CLASSES},
            "first_lines": {c: lines[c].most_common(8) for c in CLASSES}, "modules": per_module,
            "failures": failures}


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    summary = classify(argv[0])
    c = summary["counts"]
    print(f"ran {summary['ran']}: passed {c.get('passed', 0)}, failed {c.get('failed', 0)}, errors "
          f"{c.get('error', 0)}, skipped {c.get('skipped', 0)}, xfailed {c.get('xfailed', 0)}")
    print("first causes of failures and errors: " + ", ".join(f"{k} {v}" for k, v in summary["causes"].items()))
    for cls in CLASSES:
        for line, n in summary["first_lines"][cls]:
            print(f"  {cls} {n:5}  {line}")
    bad = {m: mc for m, mc in summary["modules"].items() if mc.get("failed") or mc.get("error")}
    if bad:
        print("modules with failures or errors:")
        for m, mc in bad.items():
            print(f"  {m}: " + ", ".join(f"{k} {v}" for k, v in sorted(mc.items())))
    if "--json" in argv:
        with open(argv[argv.index("--json") + 1], "w") as f:
            json.dump(summary, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
