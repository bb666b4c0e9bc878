#!/usr/bin/env python3
"""tests/checks/check_bootstrap_sets.py: what each command installs (scripts/bootstrap --list run|check|test).

usage: check_bootstrap_sets.py ROOT

scripts/run installs and builds what running needs and nothing else: the run
set must name none of the test-only packages (chromium, Slurm, munge, Open
MPI, clang, libomp, iproute2, fmt's CMake package, GoogleTest) nor the Python
test tools, and each package it names must be one the `ladder` target builds
with (a header ladder's sources include, or a build tool). check (gpu-smoke)
is run plus GoogleTest; test is check plus the rest. --list installs nothing,
and a bad set exits 2.
"""
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(sys.argv[1])
BOOTSTRAP = ROOT / "scripts" / "bootstrap"
TEST_ONLY = ["chromium", "slurmctld", "slurmd", "slurm-client", "munge", "openmpi-bin", "clang", "libomp-dev",
             "iproute2", "libfmt-dev", "libgtest-dev", "libgmock-dev"]
# Why ladder's build needs each package of the run set: a header its sources include, or a tool.
RUN_NEEDS = {"build-essential": None, "cmake": None, "ninja-build": None, "ccache": None,
             "nlohmann-json3-dev": "nlohmann/json", "libboost-math-dev": "boost/math/",
             "libbenchmark-dev": "benchmark/benchmark.h", "libgloo-dev": "ProcessGroupGloo.hpp",
             "libsqlite3-dev": "sqlite3.h"}  # ladder nsys-import reads Nsight's SQLite export


def listing(name):
    p = subprocess.run([BOOTSTRAP, "--list", name], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    items = {}
    for line in p.stdout.splitlines():
        if line.startswith("#"):
            continue
        kind, item = line.split()[:2]
        items.setdefault(kind, []).append(item)
    return items


def included_anywhere(text):
    """Whether some source of ladder's (not the tests') names `text` in an #include."""
    for path in ROOT.rglob("*"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in ("build", "tests", ".git", ".venv") or path.suffix not in (".h", ".cpp", ".cu"):
            continue
        if re.search(r'#\s*include\s*[<"][^>"]*' + re.escape(text), path.read_text(errors="replace")):
            return True
    return False


def main():
    run, check, test = listing("run"), listing("check"), listing("test")
    assert sorted(run["deb"]) == sorted(RUN_NEEDS), f"the run set changed: {run['deb']} (update RUN_NEEDS with why)"
    for p in TEST_ONLY:
        assert p not in run["deb"], f"{p} is a test-only package but scripts/run would install it"
    assert "pip" not in run and "pip" not in check, (run.get("pip"), check.get("pip"))
    for package, header in RUN_NEEDS.items():
        assert header is None or included_anywhere(header), f"{package}: nothing of ladder's includes {header}"
    assert check["deb"] == run["deb"] + ["libgtest-dev", "libgmock-dev"], check["deb"]
    assert test["deb"][:len(check["deb"])] == check["deb"] and set(TEST_ONLY) <= set(test["deb"]), test["deb"]
    assert test.get("pip"), "the test set installs the Python tools"
    bad = subprocess.run([BOOTSTRAP, "--list", "everything"], capture_output=True, text=True)
    assert bad.returncode == 2 and "everything" in bad.stderr, (bad.returncode, bad.stderr)
    print(f"run: {' '.join(run['deb'])}; check adds GoogleTest; test adds {len(test['deb']) - len(check['deb'])} "
          f"packages and {len(test['pip'])} Python tools")


if __name__ == "__main__":
    main()
