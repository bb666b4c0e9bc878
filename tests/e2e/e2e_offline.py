#!/usr/bin/env python3
"""tests/e2e/e2e_offline.py: the offline bundle (scripts/bundle), made here and
then used where there is no network.

usage: e2e_offline.py WORK_DIR CASE

  bundle_is_made            scripts/bundle --out WORK/bundle (needs network:
                            77 without): every package scripts/bootstrap names
                            for the build is in its MANIFEST, Boost is cut to
                            what ladder includes, every library link resolves,
                            every Python tool has a wheel for this Python
  offline_configure_and_build
                            a copy of the working tree with the bundle as its
                            .bundle/, inside a network namespace with no route
                            out (ip netns, no veth) and a mount namespace that
                            hides the system's copies of the bundle's packages
                            (their include and CMake directories emptied, their
                            libraries made empty files, dpkg told they are not
                            installed). There: a probe project finds nothing
                            without the bundle (so the hiding works), and with
                            it configures, links and runs against fmt, Google
                            Benchmark, GoogleTest, nlohmann/json, Boost.Math and
                            gloo; scripts/bootstrap says it is offline, found in
                            under 5 s, and takes the packages from the bundle
                            (the Python tools left out, as scripts/gpu-smoke
                            does: their ~100 wheels take minutes here; pip
                            resolves them from the bundle alone, --dry-run);
                            scripts/build configures the tree
                            against the bundle and builds one small target,
                            reports/stats/inference.cpp's object (Boost.Math, fmt; with
                            the precompiled LibTorch header it needs): the whole
                            tree would take about 20 minutes on 2 cores, the
                            by-hand note in tests/README.md
Both need root for the namespaces (77 without). WORK_DIR is kept between runs
(ccache then makes the second build of the object quick). LADDER_OFFLINE_TARGET
names another target to build there, `all` the whole tree (the by-hand check:
about 40 minutes on 2 cores, so not in the suite).
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
WORK = pathlib.Path(sys.argv[1])
BUNDLE = WORK / "bundle"
# What configure needs from the bundle (scripts/bootstrap's Debian names) and the headers that prove each.
STANDS_IN_FOR = ["libfmt-dev", "nlohmann-json3-dev", "libboost-math-dev", "libgtest-dev", "libgmock-dev",
                 "libbenchmark-dev", "libgloo-dev"]
# The build configures each file as an object of its own (LADDER_UNITY_BATCH=1, no unity batches), so that
# one file's object is a target.
SMALL_TARGET = os.environ.get("LADDER_OFFLINE_TARGET", "CMakeFiles/ladder_report_stats.dir/reports/stats/inference.cpp.o")
# What the build must leave behind: the small target's object, or for the whole tree its two programs.
BUILT = ["ladder", "tests/ladder_tests"] if SMALL_TARGET == "all" else [SMALL_TARGET]
# The probe: the same finds as CMakeLists.txt, then one executable using each library.
PROBE_CMAKE = """cmake_minimum_required(VERSION 3.25)
project(bundle_probe CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(fmt REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Boost 1.74 REQUIRED)
find_package(GTest REQUIRED)
find_package(benchmark REQUIRED)
find_path(GLOO_INCLUDE_DIR gloo/rendezvous/store.h REQUIRED)
add_executable(probe probe.cpp)
target_include_directories(probe PRIVATE ${GLOO_INCLUDE_DIR})
target_link_libraries(probe PRIVATE fmt::fmt nlohmann_json::nlohmann_json Boost::headers GTest::gtest
                      benchmark::benchmark)
"""
PROBE_CPP = """#include <benchmark/benchmark.h>
#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>
#include <gloo/rendezvous/store.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
int main() {
  boost::math::students_t t(4.0);
  nlohmann::json j = {{"q975", boost::math::quantile(t, 0.975)}};
  benchmark::Initialize(nullptr, nullptr);
  fmt::print("probe: {} gtest {}\\n", j.dump(), ::testing::UnitTest::GetInstance() != nullptr);
}
"""


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def need_root_and_netns():
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"):
        print("skipped: needs root, ip (iproute2) and unshare for the network and mount namespaces")
        sys.exit(77)


def manifest():
    return (BUNDLE / "MANIFEST").read_text().splitlines()


def bundle_is_made():
    need_root_and_netns()
    t0 = time.monotonic()
    p = sh([ROOT / "scripts" / "bundle", "--out", BUNDLE])
    print(p.stdout, p.stderr)
    if p.returncode != 0 and "network" in p.stderr:
        print("skipped: no network to make the bundle")
        sys.exit(77)
    assert p.returncode == 0, p.returncode
    lines = manifest()
    for pkg in STANDS_IN_FOR:
        assert any(re.fullmatch(rf"deb \S+ \S+ for {re.escape(pkg)}( .*)?", l) for l in lines), (pkg, lines[:12])
    inc = BUNDLE / "usr" / "include"
    assert (inc / "boost" / "math" / "distributions" / "students_t.hpp").is_file()
    assert not (inc / "boost" / "asio").exists(), "Boost was not cut to what ladder includes"
    boost_mb = sum(f.stat().st_size for f in (inc / "boost").rglob("*") if f.is_file()) / 2**20
    assert boost_mb < 30, f"Boost headers {boost_mb:.0f} MB: not cut"
    for header in ("fmt/format.h", "nlohmann/json.hpp", "gtest/gtest.h", "gmock/gmock.h", "benchmark/benchmark.h",
                   "gloo/rendezvous/store.h"):
        assert (inc / header).is_file(), header
    for link in (BUNDLE / "usr").rglob("lib*.so*"):
        assert link.exists(), f"{link} points nowhere"
    assert not list((BUNDLE / "usr").rglob("*.trace.json"))
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert f"python {py}" in lines, lines
    wheels = {l.split()[1].split("-")[0].lower().replace("_", "-") for l in lines if l.startswith("wheel ")}
    for tool in (ROOT / "scripts" / "python-tools").read_text().splitlines():
        if tool.strip() and not tool.startswith("#"):
            name = tool.split("==")[0].lower().replace("_", "-")
            assert name in wheels, (name, sorted(wheels))
    size = sum(f.stat().st_size for f in BUNDLE.rglob("*") if f.is_file()) / 2**20
    print(f"bundle: {size:.0f} MB, Boost headers {boost_mb:.1f} MB, {len(wheels)} wheels, "
          f"made in {time.monotonic() - t0:.0f} s")


def hide_script():
    """Shell lines that hide the system's copies of the bundle's packages in this mount namespace."""
    pkgs = [l.split()[1] for l in manifest() if l.startswith("deb ")]
    dirs, files = set(), set()
    for pkg in pkgs + STANDS_IN_FOR:
        listed = sh(["dpkg", "-L", pkg]).stdout.splitlines() if shutil.which("dpkg") else []
        for path in listed:
            parts = pathlib.PurePosixPath(path).parts
            # A directory right under an include, cmake or share/cmake folder is the package's own.
            for depth in range(2, len(parts)):
                parent = str(pathlib.PurePosixPath(*parts[:depth]))
                if parent in ("/usr/include", "/usr/lib/x86_64-linux-gnu/cmake", "/usr/share/cmake",
                              "/usr/lib/cmake", "/usr/lib/aarch64-linux-gnu/cmake") and depth + 1 <= len(parts):
                    own = str(pathlib.PurePosixPath(*parts[:depth + 1]))
                    (dirs if os.path.isdir(own) else files).add(own)
                    break
            else:
                if re.search(r"/lib[^/]*\.(so[.\d]*|a)$", path) and os.path.isfile(path) and not os.path.islink(path):
                    files.add(path)
    lines = ["set -e"]
    lines += [f"mount -t tmpfs ladder-hidden '{d}'" for d in sorted(dirs)]
    lines += [f"mount --bind /dev/null '{f}'" for f in sorted(files)]
    # dpkg's database without the packages the bundle stands in for: bootstrap sees them missing.
    names = "|".join(p.replace(".", "[.]").replace("+", "[+]") for p in STANDS_IN_FOR)
    lines += [f"awk -v RS= -v ORS='\\n\\n' '!/^Package: ({names})\\n/' "
              f"/var/lib/dpkg/status > '{WORK}/dpkg-status'",
              f"mount --bind '{WORK}/dpkg-status' /var/lib/dpkg/status", "set +e"]
    return "\n".join(lines), sorted(dirs), sorted(files)


def copy_tree(dest):
    """The working tree as a fresh clone of it would be (tracked and untracked, not ignored)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    files = sh(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"]).stdout.split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    shutil.copytree(BUNDLE, dest / ".bundle", symlinks=True)


def offline_configure_and_build():
    need_root_and_netns()
    if not (BUNDLE / "MANIFEST").is_file():
        print("skipped: no bundle (bundle_is_made did not run or was skipped)")
        sys.exit(77)
    src, build, probe = WORK / "src", WORK / "build", WORK / "probe"
    copy_tree(src)
    shutil.rmtree(src / ".venv", ignore_errors=True)
    for d in (build, probe / "build-without", probe / "build-with"):
        shutil.rmtree(d, ignore_errors=True)
    probe.mkdir(parents=True, exist_ok=True)
    (probe / "CMakeLists.txt").write_text(PROBE_CMAKE)
    (probe / "probe.cpp").write_text(PROBE_CPP)
    target = "" if SMALL_TARGET == "all" else f"--target '{SMALL_TARGET}'"
    hide, dirs, files = hide_script()
    print(f"hidden: {len(dirs)} directories, {len(files)} libraries, and the packages in dpkg's database")
    script = f"""{hide}
echo "== probe without the bundle"
cmake -S '{probe}' -B '{probe}/build-without' -G Ninja > '{probe}/without.log' 2>&1; echo "probe-without-exit=$?"
echo "== probe with the bundle"
cmake -S '{probe}' -B '{probe}/build-with' -G Ninja -DCMAKE_PREFIX_PATH='{src}/.bundle/usr' > '{probe}/with.log' 2>&1 &&
  cmake --build '{probe}/build-with' >> '{probe}/with.log' 2>&1 && '{probe}/build-with/probe'; echo "probe-with-exit=$?"
echo "== bootstrap"
s=$(date +%s%N); LADDER_PYTHON_TOOLS=0 '{src}/scripts/bootstrap'
echo "bootstrap-exit=$? bootstrap-ms=$(( ($(date +%s%N) - s) / 1000000 ))"
echo "== the Python tools resolve from the bundle's wheels alone"
'{src}/.venv/bin/python' -m pip install --dry-run --quiet --disable-pip-version-check --no-index \
  --find-links '{src}/.bundle/wheels' -r '{src}/scripts/python-tools'; echo "wheels-exit=$?"
echo "== build"
s=$(date +%s%N)
LADDER_PYTHON_TOOLS=0 LADDER_BUILD_DIR='{build}' '{src}/scripts/build' {target} -DLADDER_UNITY_BATCH=1
echo "build-exit=$? build-ms=$(( ($(date +%s%N) - s) / 1000000 ))"
"""
    ns = f"ladder-offline-{os.getpid()}"
    sh(["ip", "netns", "add", ns])
    try:
        p = subprocess.run(["ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private",
                            "bash", "-c", script], capture_output=True, text=True,
                           timeout=5400 if SMALL_TARGET == "all" else 1500)
    finally:
        sh(["ip", "netns", "delete", ns])
    out = p.stdout + p.stderr
    print(out)
    # The hiding works: without the bundle the probe finds nothing; with it, all, and it runs.
    assert "probe-without-exit=0" not in out, (probe / "without.log").read_text()[-3000:]
    assert "probe-with-exit=0" in out, (probe / "with.log").read_text()[-3000:]
    assert re.search(r'probe: \{"q975":2\.77\d*\} gtest true', out), out
    # bootstrap: offline at once, the packages and the Python tools from the bundle.
    m = re.search(r"bootstrap: network: offline \(no default route\), found in (\d+\.\d+) s", out)
    assert m and float(m.group(1)) < 5, out
    m_from = re.search(r"bootstrap: from the offline bundle \(configure finds them in .*\): (.*)", out)
    assert m_from and sorted(m_from.group(1).split()) == sorted(STANDS_IN_FOR), out
    assert "Python tools: left out (LADDER_PYTHON_TOOLS=0" in out and "bootstrap-exit=0" in out, out
    assert "apt-installing" not in out and "pip-installing" not in out, out
    assert "wheels-exit=0" in out, out
    # configure found every package in the bundle, and the object built.
    assert "build-exit=0" in out, (build / "configure.log").read_text()[-3000:] if (build / "configure.log").exists() \
        else out
    cache = (build / "CMakeCache.txt").read_text()
    # fmt's headers come with LibTorch (CMakeLists.txt: fmt_compiled.cpp): configure asks for no fmt package.
    fmt_dir = re.search(r"^fmt_DIR:\w+=(.*)$", cache, re.M)
    assert not fmt_dir or fmt_dir.group(1).endswith("-NOTFOUND"), fmt_dir.group(1)
    for key in ("nlohmann_json_DIR", "Boost_DIR", "GTest_DIR", "benchmark_DIR", "GLOO_INCLUDE_DIR"):
        m = re.search(rf"^{key}:\w+=(.*)$", cache, re.M)
        assert m and m.group(1).startswith(str(src / ".bundle")), (key, m and m.group(1))
    for built in BUILT:
        assert (build / built).is_file(), built
    times = dict(re.findall(r"(bootstrap|build)-ms=(\d+)", out))
    found = re.search(r"network: offline .*, found in (\d+\.\d+) s", out).group(1)
    print(f"offline: network found offline in {found} s; bootstrap {int(times['bootstrap']) / 1000:.1f} s; "
          f"configure + {SMALL_TARGET} {int(times['build']) / 1000:.0f} s")


CASES = {f.__name__: f for f in (bundle_is_made, offline_configure_and_build)}

if __name__ == "__main__":
    WORK.mkdir(parents=True, exist_ok=True)
    CASES[sys.argv[2]]()
    print(f"{sys.argv[2]}: ok")
