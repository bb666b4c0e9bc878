#!/usr/bin/env python3
"""tests/checks/check_function_length.py: no function in the tree is longer than a
screen (80 lines), except the declarative tables that are meant to be read as
one list.

    check_function_length.py SOURCE_DIR

The tree is every source under bench/, profiler/, reports/, scripts/, tests/
and variants/, and any *.py at the top: C++ (*.cpp, *.h), CUDA (*.cu, *.cuh)
and Python (*.py, and the files without a suffix whose first line is a python
shebang, as scripts/qualify). The list comes from git (tracked files and new
ones it does not ignore), so build directories, .venv/, .bundle/ and what git
ignores are not sources; where SOURCE_DIR is not a git checkout (a bundle, an
unpacked archive) it is a walk of those folders (the build directories, .venv/
and .bundle/ are outside them). The C++ under tests/fixtures/ is test data (a
layering check's example trees), not the project's code, and is left out.

Uses lizard (PyPI, pinned by scripts/bootstrap) to find every function and its
length in lines, from its signature to its closing brace (C++, CUDA) or its
last line (Python); CUDA is read as C++.
Prints each one over the limit as file:line: name (N lines) and exits 1; exits
0 when none is; 2 on a bad command line or when it finds no sources.
"""
import pathlib
import subprocess
import sys

import lizard

LIMIT = 80
FOLDERS = ("bench", "profiler", "reports", "scripts", "tests", "variants")
# What lizard reads each suffix as: it has no CUDA reader; its C++ reader takes kernels and launches.
LANGUAGE_OF = {".cpp": ".cpp", ".h": ".h", ".cu": ".cpp", ".cuh": ".h", ".py": ".py"}
SKIPPED = ("tests/fixtures/",)  # under FOLDERS but not sources: test data
# Declarative tables: one entry per declared thing, read as a list.
TABLES = {
    "ladder::step_metrics",  # bench/measure/harness/step_metrics.cpp: every per-step metric
    "ladder::run_figures",   # reports/model/report/run_figures.cpp: every run-level figure
    "ladder::make_fields",   # variants/config_fields.cpp: every config field, its flag, help and check
}


def listed_files(root):
    """The files of the checkout as git sees them (tracked, and new ones it does not ignore), relative
    to root; None where git or a checkout is not there."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [pathlib.PurePosixPath(p) for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def walked_files(root):
    """The files under FOLDERS and at the top, relative to root. Build directories, .venv/, .bundle/
    and .git/ are at the top, outside FOLDERS; __pycache__ holds no sources."""
    files = [pathlib.PurePosixPath(p.name) for p in root.iterdir() if p.is_file()]
    files += [pathlib.PurePosixPath(*p.relative_to(root).parts)
              for folder in FOLDERS for p in (root / folder).rglob("*") if p.is_file()]
    return files


def is_python_script(path):
    """A file without a suffix whose first line is a python shebang (scripts/qualify)."""
    try:
        with open(path, "rb") as f:
            first = f.readline(200)
    except OSError:
        return False
    return first.startswith(b"#!") and b"python" in first


def sources(root):
    """(path relative to root, the suffix lizard reads it as) for every source of the tree, sorted."""
    files = listed_files(root) or walked_files(root)  # none listed: not a checkout of its own
    found = []
    for rel in sorted(set(files), key=str):
        path = root / rel
        in_tree = (len(rel.parts) > 1 and rel.parts[0] in FOLDERS) or (len(rel.parts) == 1 and rel.suffix == ".py")
        if not in_tree or str(rel).startswith(SKIPPED) or not path.is_file():
            continue
        if rel.suffix in LANGUAGE_OF:
            found.append((rel, LANGUAGE_OF[rel.suffix]))
        elif rel.suffix == "" and is_python_script(path):
            found.append((rel, ".py"))
    return found


def functions(path, language):
    """lizard's functions of one file, read as the language of that suffix whatever its own name."""
    if path.suffix == language:
        return lizard.analyze_file(str(path)).function_list
    text = path.read_text(encoding="utf-8", errors="replace")
    return lizard.analyze_file.analyze_source_code(str(path) + language, text).function_list


def main(argv):
    if len(argv) != 2:
        print("usage: check_function_length.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    files = sources(root) if root.is_dir() else []
    if not files:
        print(f"check_function_length: no sources under {root}/{{{','.join(FOLDERS)}}}", file=sys.stderr)
        return 2
    long_ones = []
    for rel, language in files:
        for f in functions(root / rel, language):
            if f.length > LIMIT and f.name not in TABLES:
                long_ones.append(f"{rel}:{f.start_line}: {f.name} ({f.length} lines)")
    for line in long_ones:
        print(line)
    print(f"check_function_length: {len(files)} files, {len(long_ones)} function(s) over {LIMIT} lines"
          + ("" if not long_ones else "; split them (declarative tables are listed in TABLES)"))
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
