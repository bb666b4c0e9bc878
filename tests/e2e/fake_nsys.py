#!/usr/bin/env python3
"""tests/e2e/fake_nsys.py: stands in for Nsight Systems' `nsys profile` where
there is none (no GPU, no Nsight here), to test what scripts/nsys does around
it: which report each rank gets, under which launcher.

usage (as scripts/nsys calls nsys): fake_nsys.py profile --opt=value... COMMAND ARGS...

It appends one JSON line to $FAKE_NSYS_LOG (the options, the rank variables
its process saw, the command), writes OUTPUT.nsys-rep (that line) and, with
--export=sqlite, OUTPUT.sqlite (a copy of $FAKE_NSYS_EXPORT when set), then
runs COMMAND and exits with its code. It profiles nothing.
"""
import json
import os
import shutil
import subprocess
import sys

RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
             "SLURM_NTASKS", "MASTER_ADDR", "MASTER_PORT")


def main(argv):
    if not argv or argv[0] != "profile":
        print(f"fake nsys: expected 'profile', got {argv[:1]}", file=sys.stderr)
        return 2
    opts, i = {}, 1
    while i < len(argv) and argv[i].startswith("--"):
        key, _, value = argv[i][2:].partition("=")
        opts[key] = value
        i += 1
    command = argv[i:]
    output = opts.get("output")
    if not output or not command:
        print(f"fake nsys: expected --output=REPORT and a command, got {argv}", file=sys.stderr)
        return 2
    record = {"options": opts, "env": {k: os.environ[k] for k in RANK_VARS if k in os.environ}, "command": command}
    line = json.dumps(record)
    with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
        log.write(line + "\n")
    with open(output + ".nsys-rep", "w") as rep:
        rep.write(line + "\n")
    if opts.get("export") == "sqlite" and os.environ.get("FAKE_NSYS_EXPORT"):
        shutil.copy(os.environ["FAKE_NSYS_EXPORT"], output + ".sqlite")
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
