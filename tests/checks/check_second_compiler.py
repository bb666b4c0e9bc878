#!/usr/bin/env python3
"""tests/checks/check_second_compiler.py: every C++ translation unit through a second compiler.

usage: check_second_compiler.py BUILD_DIR [CLANGXX]

The project builds with GCC; users build with other compilers (the first GPU
machine's stock Ubuntu 24.04 image has GCC 13, which rejected a line GCC 12
accepts). This runs Clang's front end (-fsyntax-only: no code generation) on
every C++ file in BUILD_DIR/compile_commands.json with the build's own flags
(each source of a unity file alone, with that file's flags), so code that only
one compiler accepts, or that compiles only inside its unity batch, fails the
test suite. To be cheap on
2 cores it first builds one Clang precompiled header from the LibTorch PCH
header the build uses, then checks two files at a time; and a file that passed
before with the same compiler, command, contents and project headers (a hash
of all of them, kept in ~/.cache/ladder/second-compiler, or under
$LADDER_CACHE) is not checked again: a change to any header of ladder's
rechecks every file.

Exit 0 when every file compiles, 1 naming each file that does not with the
compiler's first errors, 77 (ctest's SKIP) when no Clang is installed.
"""
import concurrent.futures
import hashlib
import json
import os
import pathlib
import shlex
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def clang_command(command, clang, pch):
    """The build's compile command for one file, as a Clang syntax check."""
    args = shlex.split(command)
    out = [clang]
    skip_next = False
    uses_pch = False
    for i, a in enumerate(args[1:], start=1):
        if skip_next:
            skip_next = False
            continue
        if a in ("-o", "-MF", "-MT", "-MQ"):
            skip_next = True
            continue
        # -Werror (LADDER_WERROR, scripts/test --ci) is GCC's verdict on warnings;
        # this check asks whether Clang accepts the code, not what it warns about.
        if a in ("-c", "-Winvalid-pch", "-MD", "-MMD") or a == "-Werror" or a.startswith("-Werror="):
            continue
        if a == "-include" and args[i + 1].endswith("cmake_pch.hxx"):
            skip_next = True
            uses_pch = True
            continue
        out.append(a)
    if uses_pch and pch:
        out[1:1] = ["-include-pch", str(pch)]
    return out + ["-fsyntax-only", "-Wno-unknown-warning-option"]


def cache_dir():
    base = os.environ.get("LADDER_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ladder")
    return pathlib.Path(base) / "second-compiler"


def project_headers_digest(root):
    """One hash over every header of the project (what any file may include)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.h")) + sorted(root.rglob("*.cuh")):
        if "build" in path.relative_to(root).parts[0] or path.relative_to(root).parts[0].startswith("."):
            continue
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def unity_members(path):
    """The sources a CMake unity file (build/.../Unity/unity_*.cxx) includes, else []."""
    if "/Unity/unity_" not in path:
        return []
    text = pathlib.Path(path).read_text()
    return [line.split('"')[1] for line in text.splitlines() if line.startswith('#include "')]


def per_source(entries):
    """The entries with each unity file replaced by one entry per source it
    includes (its command, that source in place of the unity file): each file
    is checked alone, so one that compiles only after another of its batch
    (an include it forgot, found in the other's) fails here."""
    out = []
    for e in entries:
        members = unity_members(e["file"])
        if not members:
            out.append(e)
        for member in members:
            out.append(dict(e, file=member, command=e["command"].replace(e["file"], member)))
    return out


def entry_key(e, version, headers, root, build):
    """The file's check as a hash, the same in any clone: the checkout's and
    the build's paths in its command are replaced by placeholders."""
    def portable(text):
        return text.replace(str(build.resolve()), "<build>").replace(str(root), "<root>")
    h = hashlib.sha256()
    for part in (version, headers, portable(e["command"]), portable(e["directory"]), portable(e["file"])):
        h.update(part.encode())
    h.update(pathlib.Path(e["file"]).read_bytes())
    return h.hexdigest()


def main():
    build = pathlib.Path(sys.argv[1])
    clang = sys.argv[2] if len(sys.argv) > 2 else (os.environ.get("CLANGXX") or shutil.which("clang++"))
    if not clang or not shutil.which(clang):
        print("SKIP: no clang++ on PATH (scripts/bootstrap installs Debian's clang); second-compiler check not run")
        return SKIP
    version = subprocess.run([clang, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    entries = [e for e in per_source(json.loads((build / "compile_commands.json").read_text()))
               if e["file"].endswith(".cpp") and "/_deps/" not in e["file"]]
    if not entries:
        print(f"FAIL: no C++ files in {build}/compile_commands.json")
        return 1
    root = pathlib.Path(__file__).resolve().parents[2]
    headers = project_headers_digest(root)
    cache = cache_dir()
    keys = {e["file"]: entry_key(e, version, headers, root, build) for e in entries}
    cached = [e for e in entries if (cache / keys[e["file"]]).exists()]
    total = len(entries)
    entries = [e for e in entries if not (cache / keys[e["file"]]).exists()]
    if not entries:
        print(f"PASS: {total} C++ files compile with {version} (-fsyntax-only); all unchanged since a passing "
              f"check ({cache})")
        return 0
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="ladder_clang_"))
    try:
        # One Clang PCH of the LibTorch header, with the flags of a file that uses it.
        pch = None
        with_pch = [e for e in entries if "cmake_pch.hxx" in e["command"]]
        if with_pch:
            header = next(a for a in shlex.split(with_pch[0]["command"]) if a.endswith("cmake_pch.hxx"))
            cmd = clang_command(with_pch[0]["command"], clang, None)[:-2]
            cmd = [a for a in cmd if a != with_pch[0]["file"]]
            pch = tmp / "torch.pch"
            p = subprocess.run(cmd + ["-x", "c++-header", header, "-o", str(pch)], capture_output=True,
                               text=True, cwd=with_pch[0]["directory"])
            if p.returncode != 0:
                print(f"FAIL: {version} cannot precompile {header}:\n{p.stderr[-3000:]}")
                return 1

        def check(e):
            cmd = clang_command(e["command"], clang, pch)
            p = subprocess.run(cmd, capture_output=True, text=True, cwd=e["directory"])
            return e["file"], p.returncode, p.stderr

        failed = []
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
            for path, rc, err in pool.map(check, entries):
                if rc != 0:
                    errors = [l for l in err.splitlines() if "error" in l][:8]
                    failed.append(f"{path}:\n    " + "\n    ".join(errors or err.splitlines()[-8:]))
                else:
                    try:  # remembered only once it passed
                        cache.mkdir(parents=True, exist_ok=True)
                        (cache / keys[path]).write_text(path + "\n")
                    except OSError:
                        pass
        rel = len(entries)
        if failed:
            print(f"FAIL: {len(failed)} of {rel} files do not compile with {version}:")
            print("\n".join(failed))
            return 1
        print(f"PASS: {rel} C++ files compile with {version} (-fsyntax-only) as well as with the build's compiler"
              f"{f'; {len(cached)} more unchanged since a passing check' if cached else ''}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
