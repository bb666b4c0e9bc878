#!/usr/bin/env python3
"""tests/checks/check_git_stamp.py: the git stamp names ladder's own commit, or "unknown".

usage: check_git_stamp.py GIT_STAMP_CMAKE

A source tree copied without its .git into another repository (as on the
first GPU machine) must not be stamped with that repository's commit. This
makes such a layout in a temporary directory and runs profiler/common/git_stamp.cmake
on both trees: the repository's own top level gets its commit, the copy
inside it "unknown".
"""
import pathlib
import subprocess
import sys
import tempfile


def stamp(script, source, out):
    subprocess.run(["cmake", f"-DSOURCE_DIR={source}", f"-DOUTPUT={out}", "-P", script], check=True)
    return out.read_text()


def main():
    script = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="ladder_stamp_") as tmp:
        outer = pathlib.Path(tmp) / "outer"
        inner = outer / "ladder-copy"
        inner.mkdir(parents=True)
        git = ["git", "-C", str(outer), "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run([*git, "init", "-q"], check=True)
        (outer / "f").write_text("x\n")
        subprocess.run([*git, "add", "f"], check=True)
        subprocess.run([*git, "commit", "-qm", "outer"], check=True)
        commit = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        own = stamp(script, outer, pathlib.Path(tmp) / "own.cpp")
        assert f'"{commit}' in own, f"the repository's own stamp lacks {commit}:\n{own}"
        copy = stamp(script, inner, pathlib.Path(tmp) / "copy.cpp")
        assert '"unknown"' in copy and commit not in copy, f"a copy inside another repository:\n{copy}"
    print(f"ok: own checkout stamped {commit}, a copy inside it 'unknown'")


if __name__ == "__main__":
    main()
