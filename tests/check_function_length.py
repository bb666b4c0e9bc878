#!/usr/bin/env python3
"""tests/check_function_length.py: no function in bench/ and reports/ is longer
than a screen (80 lines), except the declarative tables that are meant to be
read as one list.

    check_function_length.py SOURCE_DIR

Uses lizard (PyPI, pinned by scripts/bootstrap) to find every C++ function and
its length in lines, from its signature to its closing brace. Prints each one
over the limit as file:line: name (N lines) and exits 1; exits 0 when none is.
"""
import pathlib
import sys

import lizard

LIMIT = 80
FOLDERS = ("bench", "reports")
# Declarative tables: one entry per declared thing, read as a list.
TABLES = {
    "ladder::step_metrics",  # bench/step_metrics.cpp: every per-step metric
    "ladder::run_figures",   # reports/run_figures.cpp: every run-level figure
}


def main(argv):
    if len(argv) != 2:
        print("usage: check_function_length.py SOURCE_DIR", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1])
    files = sorted(p for folder in FOLDERS for ext in ("*.cpp", "*.h", "*.cu")
                   for p in (root / folder).rglob(ext))
    if not files:
        print(f"check_function_length: no sources under {root}/{{{','.join(FOLDERS)}}}", file=sys.stderr)
        return 2
    long_ones = []
    for path in files:
        for f in lizard.analyze_file(str(path)).function_list:
            if f.length > LIMIT and f.name not in TABLES:
                long_ones.append(f"{path.relative_to(root)}:{f.start_line}: {f.name} ({f.length} lines)")
    for line in long_ones:
        print(line)
    print(f"check_function_length: {len(files)} files, {len(long_ones)} function(s) over {LIMIT} lines"
          + ("" if not long_ones else "; split them (declarative tables are listed in TABLES)"))
    return 1 if long_ones else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
