#!/usr/bin/env python3
"""scripts/gpu_check.py: the GPU node check that scripts/gpu-smoke runs.

usage: scripts/gpu-smoke [--time-budget MIN] [--device cuda|cuda:N|cpu] [--peers LIST] [--rungs LIST]
                         [--autotune-min MIN] [--ablation PARTS] [--results-dir DIR] [--references DIR] [LADDER_RUN_OPTIONS...]

Builds, then runs the stages below within the time budget (default 10
minutes, the build included), most important first, each announced by a
progress line and ended by one line `PASS <stage>`, `FAIL <stage>: <why>` or
`SKIP <stage>: <why>`:

  build          scripts/build --for check --target ladder --target ladder_tests
  unit-tests     ladder_tests' CUDA cases (on a CPU: those named Cuda, which skip,
                 and the breakdown's DeviceSteps.*); where a kernel with a
                 fallback fails its tests (KERNEL_FALLBACKS: fused-ln's vector
                 kernels, fused-ce's batched kernel), the later runs take the
                 fallback's option, so the measurement still runs, and the
                 FAIL line says so
  nvtx-trees     ladder_tests' Nvtx.* (the NVTX range tree of a step)
  ladder-run     the default ladder with the peers (eager and compile on CUDA,
                 eager on a CPU), its rounds extended by --repeat auto within its
                 share of the time left: the time left is shared in proportion
                 to the processes the ladder's two rounds, ddp and one ablation
                 round make (their `ladder run --plan`)
  ladder-smoke   scripts/smoke_verdict.py on that run: each rung ran, held
  breakdown      parity, had its switches act; its op breakdown fits its dt
  band-table     `ladder bands`: the top rung's op breakdown per band
                 against each peer (compile first; eager where compile did not run)
  speed-of-light `ladder sol`: every rung's bands against their floors at the
                 run's own measured matmul ceiling and bandwidth (sol.md,
                 sol.json); FAIL where a floor is above its measurement
  qualification  scripts/qualify: `ladder compare` against the newest run of
                 this device model with this shape under --references (default
                 reports/results): per rung within the reference's spread, or
                 slower and by how much
  ddp            `ladder run --rungs ddp --nproc-per-node 1`: one rank on NCCL
                 (Gloo on a CPU), and its verdict
  gemm-sites     `ladder bench`'s gemm_sites family: each epilogue GEMM of the
                 step (variants/planners/gemm_sites.h) each way it can run (PyTorch's
                 ops, the cuBLASLt epilogue, with a 32 MiB workspace, the bias
                 gradient in fp32 apart), checked against fp64, then timed;
                 gemm-sites.md has ms per way and site (a CPU: PyTorch's only)
  kernels        `ladder bench` of the fused LayerNorm and cross-entropy
                 families and of attention at gpt2-124m's step shape
                 (kernels.md: each benchmark's ms and its check)
  autotune-peer  fused-adamw against the compile-autotune peer (Inductor's
                 max-autotune), 2 rounds, in a run of its own after the rest:
                 its first process autotunes for minutes; when at least
                 --autotune-min minutes are left (CUDA only)
  ablation       the fused parts at the top (top, top-fused, top-PART for each
                 part, or each of --ablation PARTS in its order): 2 rounds if
                 they fit in what is left, else 1, stopped at the budget's end;
                 scripts/ablation-table and the verdict

The three analysis stages cost nothing and follow the ladder at once; ddp
and gemm-sites (seconds each) come before the ablation, which takes what is
left.

Everything goes to the results directory, <results-dir>/<UTC date>-<device>/
(default reports/results/, ready to commit): the run directories (ladder/,
ddp/, ablation/) with their rung reports and no traces, the verdicts and
tables, logs/, checks.txt (the PASS/FAIL/SKIP lines) and a README.md with the
device, driver, CUDA, torch, compiler, commit and every command, rewritten as
each stage ends: what was measured when the check is killed, interrupted
(Ctrl-C: the current `ladder run` keeps its reports, exit 130) or out of time
(the run is stopped as by Ctrl-C) is kept.

Other options go to every `ladder run` of the check (the shape: --preset,
--batch, --seq, --steps, --threads ...). On CUDA the runs default to the
reference shape of reports/results/2026-11-27-gpu (gpt2-124m B16 T1024,
--total-batch 65536, --steps 5). `--device cpu` is the dry run of every
stage on a CPU (the e2e tests run it with --preset tiny).

LADDER_COMMIT names the commit in the README when the tree came to the node
without its .git (git's own answer wins where there is one).

Exit: 0 nothing FAILED, 1 a stage FAILED, 2 bad input or no CUDA device
(without --device cpu), 130 interrupted. Standard-library Python.
"""
import argparse
import datetime
import functools
import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get("LADDER_BUILD_DIR") or ROOT / "build")
LADDER = BUILD / "ladder"
TESTS = BUILD / "tests" / "ladder_tests"
SCRIPTS = ROOT / "scripts"
# The CUDA unit tests (the cases of the 2026-11-27 H100 run). On a CPU the dry run keeps
# those named Cuda (they skip) and the breakdown's own: FusedAtGpt2Widths' CPU cases take
# minutes on 2 cores and are the suite's (scripts/test).
CUDA_TESTS = "*Cuda*:FusedAtGpt2Widths.*:DeviceSteps.*:KernelActivity.*-Nvtx.*"
CPU_DRY_RUN_TESTS = "*Cuda*:DeviceSteps.*:KernelActivity.*-Nvtx.*"
STAGES = ["build", "unit-tests", "nvtx-trees", "ladder-run", "ladder-smoke", "breakdown", "band-table",
          "speed-of-light", "qualification", "ddp", "gemm-sites", "kernels", "autotune-peer", "ablation"]
# Kernels with a fallback: (the prefix of their CUDA tests, the `ladder run` option and value
# that keep a run off them, what they are). A failure of such a test in the unit-tests stage
# sends every later run of the check to the fallback.
KERNEL_FALLBACKS = [("FusedAddLayerNorm.Cuda", "--layer-norm-kernel", "row", "fused-ln's vector kernels"),
                    ("FusedCrossEntropy.Cuda", "--cross-entropy-kernel", "online", "fused-ce's batched kernel")]
GEMM_SITES_MIN_S = 30  # what the gemm-sites stage needs at least (about 30 benchmarks on a GPU)
KERNELS_MIN_S = 30  # and the kernels stage
LADDER_SLACK_S = 60  # the ladder run may overrun its share by this much before it is stopped
# The compile-autotune peer's stage needs about this long: on the 2026-11-29 H200 its first process was still
# autotuning after 5.5 minutes (each GEMM shape 21 choices in 13-17 s), and the second reads its caches.
AUTOTUNE_MIN_S = 420
# The kernels stage's micro-benchmarks: the fused LayerNorm and cross-entropy families, and SDPA at
# gpt2-124m's step shape (B16, 12 heads of 64, T 1024) beside explicit attention.
KERNELS_FILTER = "^(layernorm|cross_entropy)/|^attention/[a-z]+/[a-z0-9]+/[a-z0-9:]+/B:16/H:12/T:1024/"
RESERVE_FRACTION = 0.3  # of the budget, kept after the ladder run for ddp and the ablation when plans cannot say
KILL_GRACE_S = 60  # after the SIGINT that stops a run at the budget's end


def fmt_min(seconds):
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def slug(text):
    text = re.sub(r"\((r|tm)\)|\bnvidia\b|\bcpu\b|\bprocessor\b", " ", text, flags=re.I)
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "device"


def rel(path):
    try:
        return str(pathlib.Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def command_text(cmd):
    """The command as the README shows it: paths in the tree relative to it, this Python as python3."""
    return " ".join("python3" if str(c) == sys.executable else rel(c) if str(c).startswith(str(ROOT)) else str(c)
                    for c in cmd)


def capture(cmd, timeout=30):
    """stdout of a short command, or '' when it fails."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


class Check:
    """The stages' shared state: the clock, the results directory and its README."""

    def __init__(self, args, extra):
        self.args, self.extra = args, extra
        self.start = time.monotonic()
        self.deadline = self.start + args.time_budget * 60
        self.started_at = datetime.datetime.now(datetime.timezone.utc)
        self.lines, self.commands, self.facts = [], [], {}
        self.child = None
        self.interrupted = None  # the signal's name once one came
        self.status = "running"
        self.cuda = args.device.startswith("cuda")

    # ---- the clock --------------------------------------------------------------
    def elapsed(self):
        return time.monotonic() - self.start

    def left(self):
        return self.deadline - time.monotonic()

    def progress(self, stage, what):
        print(f"gpu-smoke [{fmt_min(self.elapsed())} of {fmt_min(self.args.time_budget * 60)}] {stage}: {what}",
              flush=True)

    # ---- results ------------------------------------------------------------------
    def make_results_dir(self, device_name):
        """<results-dir>/<UTC date>-<device_name> (a slug: h100-80gb-hbm3, cpu-amd-epyc), -2, -3 ... when taken."""
        parent = pathlib.Path(self.args.results_dir)
        base = f"{self.started_at:%Y-%m-%d}-{device_name}"
        out, n = parent / base, 1
        while out.exists():
            n += 1
            out = parent / f"{base}-{n}"
        (out / "logs").mkdir(parents=True)
        self.out = out
        self.write_readme()

    def result(self, status, stage, why="", seconds=None):
        line = f"{status} {stage}" + (f": {why}" if why else "")
        print(line, flush=True)
        self.lines.append((line, seconds))
        (self.out / "checks.txt").write_text("".join(l + "\n" for l, _ in self.lines))
        self.write_readme()
        return status

    def write_readme(self):
        f, a = self.facts, self.args
        took = fmt_min(self.elapsed())
        lines = [f"# GPU check, {self.started_at:%Y-%m-%d}: {f.get('device', a.device)}", "",
                 f"`scripts/gpu-smoke {' '.join(a.argv)}` ({a.time_budget:g} min budget), started "
                 f"{self.started_at:%Y-%m-%dT%H:%M}Z, {took} so far; status: **{self.status}**.", ""]
        for key, label in (("device", "Device"), ("driver", "Driver"), ("cuda", "CUDA"), ("torch", "torch"),
                           ("compiler", "Compiler"), ("commit", "Commit"), ("ladder", "ladder"),
                           ("build", "Build"), ("host", "Host")):
            if f.get(key):
                lines.append(f"- **{label}**: {f[key]}")
        lines += ["", "## Checks", "", "```"]
        lines += [l + (f"   ({s:.0f} s)" if s is not None else "") for l, s in self.lines]
        lines += ["```", "", "## Commands", "", "Run from the tree's root (paths relative to it), in this order.", "",
                  "| stage | command | wall |", "|---|---|---|"]
        for stage, cmd, secs in self.commands:
            lines.append(f"| {stage} | `{cmd}` | {'-' if secs is None else f'{secs:.0f} s'} |")
        lines += ["", "## Files", "",
                  "- `ladder/`, `ddp/`, `autotune/`, `ablation/`: the run directories as `ladder run` wrote them (summary.json, "
                  "plan.json, roofline.json, every `<rung>/report.json`), traces left out",
                  "- `verdict.txt`, `ddp-verdict.txt`, `ablation-verdict.txt`: scripts/smoke_verdict.py on each run; "
                  "`band-table.md`, `qualification.txt`, `ablation-table.md`: the stages' tables; "
                  "`gemm-plan.md`: the top rung's GEMM plan, `gemm-plan.json` to rerun it (`--gemm-plan FILE`); "
                  "`attention-plan.md`: its SDPA backend and every candidate's times; `sol.md`, `sol.json`: "
                  "`ladder sol` of the ladder; `gemm-sites.md`, `kernels.md`: the micro-benchmarks' tables",
                  "- `checks.txt`: the lines above; `logs/`: each stage's output", "",
                  "`ladder compare` reads the runs from a fresh clone, e.g. against the reference the qualification "
                  "used:", "", "```sh", f"build/ladder compare {self.facts.get('reference', 'REFERENCE_RUN')} "
                  f"{rel(self.out / 'ladder')}", "```", ""]
        tmp = self.out / ".README.md.tmp"
        tmp.write_text("\n".join(lines))
        tmp.replace(self.out / "README.md")

    def strip_traces(self):
        """Traces stay on the node: a results directory holds reports only."""
        for p in sorted(self.out.rglob("*"), reverse=True):
            if p.is_file() and (p.name.endswith((".trace.json", ".trace.json.gz", ".pt.trace.json"))
                                or "traces" in p.relative_to(self.out).parts):
                p.unlink()
            elif p.is_dir() and p.name == "traces" and not any(p.iterdir()):
                p.rmdir()

    # ---- running a command ------------------------------------------------------
    def run(self, stage, cmd, log_name, deadline=None, echo=lambda line: True, env=None):
        """Runs cmd in its own process group, its output to logs/<log_name> and (lines echo()
        accepts) the terminal; at `deadline` (or on Ctrl-C / SIGTERM) it gets SIGINT, as Ctrl-C
        would give it, then SIGKILL after a grace period. Returns (exit code, seconds, cut)."""
        log_path = self.out / "logs" / log_name
        t0 = time.monotonic()
        entry = [stage, command_text(cmd), None]
        self.commands.append(entry)
        self.write_readme()
        with open(log_path, "w") as log:
            try:
                proc = subprocess.Popen([str(c) for c in cmd], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, bufsize=1, start_new_session=True,
                                        env={**os.environ, **(env or {})})
            except OSError as e:
                log.write(f"cannot start: {e}\n")
                entry[2] = 0.0
                return 127, 0.0, False
            self.child = proc

            def pump():
                for line in proc.stdout:
                    log.write(line)
                    if echo(line):
                        sys.stdout.write(line)
                        sys.stdout.flush()
            reader = threading.Thread(target=pump, daemon=True)
            reader.start()
            cut, signalled_at = False, None
            while proc.poll() is None:
                now = time.monotonic()
                if signalled_at is None and (self.interrupted or (deadline is not None and now >= deadline)):
                    cut = not self.interrupted
                    self.signal_child(signal.SIGINT)
                    signalled_at = now
                elif signalled_at is not None and now - signalled_at > KILL_GRACE_S:
                    self.signal_child(signal.SIGKILL)
                time.sleep(0.2)
            reader.join(timeout=10)
            self.child = None
        secs = time.monotonic() - t0
        entry[2] = secs
        self.write_readme()
        return proc.returncode, secs, cut

    def signal_child(self, sig):
        if self.child is not None and self.child.poll() is None:
            try:
                os.killpg(self.child.pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def on_signal(self, signum, _frame):
        self.interrupted = signal.Signals(signum).name
        self.signal_child(signal.SIGINT)


# ---- what the node is ---------------------------------------------------------------
def visible_gpus():
    """[(name, memory, driver)] from nvidia-smi, [] without it or a GPU."""
    out = capture(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"])
    return [tuple(x.strip() for x in l.split(",")) for l in out.splitlines() if l.count(",") == 2]


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def describe_device(check):
    """The device's name (for the results directory) and what the README says of the node."""
    f = check.facts
    f["host"] = f"{os.cpu_count()} cores of {cpu_model()}"
    if not check.cuda:
        f["device"] = f"CPU ({cpu_model()}; dry run, --device {check.args.device})"
        return "cpu-" + slug(cpu_model())
    gpus = visible_gpus()
    index = int(check.args.device.split(":")[1]) if ":" in check.args.device else 0
    name, memory, driver = gpus[index] if index < len(gpus) else ("unknown GPU", "", "")
    f["device"] = f"{name} ({memory}), {len(gpus)} visible, this check on {check.args.device}"
    header = capture(["nvidia-smi"])
    m = re.search(r"CUDA Version:\s*([\d.]+)", header)
    f["driver"] = f"{driver}" + (f" (its CUDA: {m.group(1)})" if m else "")
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    release = [l for l in capture([nvcc, "--version"]).splitlines() if "release" in l]
    f["cuda"] = f"toolkit: {release[0].strip()}" if release else "toolkit: no nvcc found"
    return slug(name)


def describe_build(check):
    """Torch, the compiler, the commit and the build's features, once built."""
    f = check.facts
    py = ROOT / ".venv" / "bin" / "python"
    py = str(py) if py.exists() else "python3"
    f["torch"] = capture([py, "-c", "import torch; print(torch.__version__, '(CUDA', torch.version.cuda, end=')')"]) \
        or f"not importable by {py}"
    cache = BUILD / "CMakeCache.txt"
    text = cache.read_text() if cache.exists() else ""
    m = re.search(r"^CMAKE_CXX_COMPILER:\w+=(.+)$", text, re.M)
    if m:
        f["compiler"] = (capture([m.group(1), "--version"]).splitlines() or [m.group(1)])[0]
    m = re.search(r"^CMAKE_PREFIX_PATH:\w+=(.+)$", text, re.M)
    bundle = next((p for p in (m.group(1).split(";") if m else []) if (pathlib.Path(p).parent / "MANIFEST").exists()),
                  None)
    f["build"] = (f"`{rel(BUILD)}/`, from the offline bundle at `{rel(pathlib.Path(bundle).parent)}/` "
                  f"({(pathlib.Path(bundle).parent / 'MANIFEST').read_text().splitlines()[0].lstrip('# ')})"
                  if bundle else f"`{rel(BUILD)}/`, with the system's packages")
    rev = capture(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"])
    dirty = capture(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"])
    given = os.environ.get("LADDER_COMMIT", "").strip()  # a tree copied to the node without its .git
    f["commit"] = ((rev + (" with uncommitted changes" if dirty else "")) if rev else
                   f"{given} (LADDER_COMMIT: the tree came without git)" if given else "unknown (no git here)")
    f["ladder"] = " ".join(capture([str(LADDER), "version"]).split()) or "not built"


# ---- the stages ------------------------------------------------------------------------
def ninja_progress():
    """An echo filter for a build: every line but ninja's, and ninja's every 10 %."""
    shown = [-1]

    def echo(line):
        m = re.match(r"\[(\d+)/(\d+)\]", line)
        if not m:
            return True
        tenth = 10 * int(m.group(1)) // max(int(m.group(2)), 1)
        if tenth > shown[0]:
            shown[0] = tenth
            return True
        return False
    return echo


def stage_build(check):
    check.progress("build", f"scripts/build --for check --target ladder --target ladder_tests into {rel(BUILD)}")
    # The check needs none of the tests' Python tools: their install (a minute of wheels) is left
    # to scripts/test, unless the caller asks for it.
    rc, secs, cut = check.run("build", [SCRIPTS / "build", "--for", "check", "--target", "ladder", "--target", "ladder_tests"],
                              "build.log", check.deadline, echo=ninja_progress(),
                              env={"LADDER_PYTHON_TOOLS": os.environ.get("LADDER_PYTHON_TOOLS", "0")})
    describe_build(check)
    if rc == 0:
        return check.result("PASS", "build", f"{check.facts['ladder']}", secs)
    why = "out of time" if cut else f"scripts/build exited {rc}"
    return check.result("FAIL", "build", f"{why} (log: {rel(check.out / 'logs' / 'build.log')})", secs)


def gtest_counts(log_text):
    def count(tag):
        m = re.search(r"^\[  " + tag + r"  \] (\d+) test", log_text, re.M)
        return int(m.group(1)) if m else 0
    failed = sorted(set(re.findall(r"^\[  FAILED  \] ([A-Za-z_]\w*\.\w+)", log_text, re.M)))
    return count("PASSED"), count("SKIPPED"), failed


def kernel_fallbacks(failed, extra):
    """The `ladder run` options that keep the check's later runs off kernels whose tests
    failed (`failed`: test names; KERNEL_FALLBACKS), and what each keeps them off; none for an
    option the user gave (`extra`: the check's options for every run)."""
    given = {a.split("=")[0] for a in extra if a.startswith("--")}
    options, why = [], []
    for prefix, option, value, what in KERNEL_FALLBACKS:
        if option not in given and any(t.startswith(prefix) for t in failed):
            options += [option, value]
            why.append(f"{what} ({option} {value})")
    return options, why


def take_kernel_fallbacks(check, failed):
    """Adds kernel_fallbacks' options to every later run of the check; the FAIL line's tail."""
    options, why = kernel_fallbacks(failed, check.extra)
    check.extra += options
    return f"; the later runs go without {', '.join(why)}" if why else ""


def stage_gtest(check, stage, gtest_filter, what, on_failed=lambda failed: ""):
    if not TESTS.exists():
        return check.result("FAIL", stage, f"{rel(TESTS)} is not built")
    listed = capture([str(TESTS), "--gtest_list_tests", f"--gtest_filter={gtest_filter}"], timeout=120)
    n = sum(1 for l in listed.splitlines() if l.startswith("  "))
    if n == 0:
        return check.result("SKIP", stage, f"ladder_tests has no such tests ({check.facts.get('ladder', '')})")
    check.progress(stage, f"{n} {what}")
    rc, secs, cut = check.run(stage, [TESTS, f"--gtest_filter={gtest_filter}"], f"{stage}.log", check.deadline,
                              echo=lambda l: l.startswith(("[  FAILED", "[  PASSED", "[  SKIPPED ]", "[==========]")))
    passed, skipped, failed = gtest_counts((check.out / "logs" / f"{stage}.log").read_text(errors="replace"))
    if cut:
        return check.result("SKIP", stage, f"out of time after {passed + len(failed)} of {n} tests", secs)
    if rc != 0 or failed:
        return check.result("FAIL", stage, f"{len(failed)} of {n} failed: {' '.join(failed) or f'exit {rc}'}"
                            f"{on_failed(failed)}", secs)
    if passed == 0 and skipped:
        return check.result("SKIP", stage, f"all {skipped} skip here (no CUDA device)", secs)
    return check.result("PASS", stage, f"{passed} passed" + (f", {skipped} skipped" if skipped else ""), secs)


def shape_args(check):
    """The options every `ladder run` of the check gets: the reference shape on CUDA, then the user's."""
    given = {a.split("=")[0] for a in check.extra if a.startswith("--")}
    out = ["--device", check.args.device]
    if check.cuda:
        out += [x for opt, val in (("--total-batch", "65536"), ("--steps", "5")) if opt not in given
                for x in (opt, val)]
    return out + check.extra


def run_dir_summary(run_dir):
    try:
        return json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return None


_plans = {}


def plan_processes(check, run_args, rounds):
    """How many processes a `ladder run` makes (its --plan, nothing run, asked once): each
    runnable measured cell and peer once a round, each parity reference once. None if it cannot say."""
    key = tuple(run_args)
    if key not in _plans:
        out = capture([str(LADDER), "run", *shape_args(check), *run_args, "--plan"], timeout=60)
        cells = [l.split() for l in out.splitlines()[1:] if len(l.split()) >= 5 and l.split()[-1] == "yes"]
        _plans[key] = (sum(c[1] != "parity" for c in cells), sum(c[1] == "parity" for c in cells)) if cells else None
    if _plans[key] is None:
        return None
    measured, parity = _plans[key]
    return parity + rounds * measured


def ablation_parts(check):
    """The parts the ablation takes out of the top rung, in order: --ablation's, else every part of fused."""
    return check.args.ablation.split(",") if check.args.ablation else fused_parts()


def ablation_cells(check):
    return ["top", "top-fused"] + [f"top-{p}" for p in ablation_parts(check)]


def ladder_run_args(check, peers):
    return ["--peers", peers] + (["--rungs", check.args.rungs] if check.args.rungs else [])


def ladder_share(check, peers):
    """The part of the time left that the ladder run may fill (its --time-budget): the time
    left shared in proportion to the processes of what follows it (ddp, one ablation round),
    or RESERVE_FRACTION of the budget kept for them when the plans cannot say."""
    ladder = plan_processes(check, ladder_run_args(check, peers), 2)
    rest = [plan_processes(check, ["--rungs", "ddp", "--nproc-per-node", "1", "--peers", "none"], 1),
            plan_processes(check, ["--rungs", ",".join(ablation_cells(check)), "--peers", "none"], 1)]
    # The verdicts, the band table and qualification take seconds; gemm-sites its own minimum.
    left = check.left() - 10 - GEMM_SITES_MIN_S
    if ladder is None or None in rest:
        return max(0.0, left - RESERVE_FRACTION * check.args.time_budget * 60), "30 % of the budget kept"
    return max(0.0, left * ladder / (ladder + sum(rest))), \
        f"the time left shared by processes: ladder {ladder}, ddp {rest[0]}, ablation {rest[1]} a round"


def stage_ladder(check):
    run_dir = check.out / "ladder"
    peers = check.args.peers or ("eager,compile" if check.cuda else "eager")
    share_s, how = ladder_share(check, peers)
    auto_min = max(0.1, share_s / 60)
    note = "" if check.cuda or check.args.peers else " (compile left out on a CPU: its first step compiles for a minute)"
    what = f"the rungs {check.args.rungs}" if check.args.rungs else "the default ladder"
    check.progress("ladder-run", f"{what} with the peers {peers}{note}; rounds by --repeat auto "
                                 f"within {auto_min:.1f} min ({how})")
    cmd = [LADDER, "run", *shape_args(check), *ladder_run_args(check, peers), "--repeat", "auto", "--time-budget",
           f"{auto_min:.2f}", "--out", run_dir]
    # Stopped (Ctrl-C: the run keeps what finished and writes its summary) past its share, so a
    # process that runs long cannot take the later stages' time.
    deadline = min(check.deadline - 5, time.monotonic() + share_s + LADDER_SLACK_S)
    rc, secs, cut = check.run("ladder-run", cmd, "ladder-run.log", deadline)
    check.strip_traces()
    summary = run_dir_summary(run_dir)
    if summary is None:
        return check.result("FAIL", "ladder-run", f"ladder run exited {rc} without a summary "
                                                  f"(log: {rel(check.out / 'logs' / 'ladder-run.log')})", secs)
    rows = summary["rows"]
    peers_n = sum(1 for r in rows if r.get("peer") or r["cell"].startswith("peer-"))
    rounds = max((max(r.get("rounds") or [1]) for r in rows), default=0)
    auto = (summary.get("repeat_auto") or {}).get("stopped_because") or (summary.get("repeat_auto") or {}).get(
        "stopped", "")
    what = f"{len(rows) - peers_n} rungs and {peers_n} peers, {rounds} rounds" + (f" ({auto})" if auto else "")
    if summary["status"] != "complete":
        how = "out of time" if cut else check.interrupted or "stopped"
        return check.result("SKIP", "ladder-run", f"{summary['status']} ({how}): {what}; missing "
                                                  f"{len(summary.get('missing') or [])} cells", secs)
    return check.result("PASS", "ladder-run", what, secs)


def not_a_verdict(line):
    """Echo filter: a tool's table, not its PASS/FAIL/SKIP lines (the check prints its own)."""
    return not line.startswith(("PASS ", "FAIL ", "SKIP "))


def tool(check, stage, script, run_dir, out_name, extra=()):
    """Runs a standard-library script on a run directory; its output to out_name. Returns (rc, text, seconds)."""
    rc, secs, _ = check.run(stage, [sys.executable, SCRIPTS / script, run_dir, *extra], f"{stage}.log",
                            echo=not_a_verdict)
    text = (check.out / "logs" / f"{stage}.log").read_text(errors="replace")
    (check.out / out_name).write_text(text)
    return rc, text, secs


def stage_verdicts(check):
    run_dir = check.out / "ladder"
    if run_dir_summary(run_dir) is None:
        return [check.result("SKIP", s, "no ladder run to judge") for s in ("ladder-smoke", "breakdown")]
    check.progress("verdict", "scripts/smoke_verdict.py: ran, parity, switches, op breakdown per rung")
    rc, text, secs = tool(check, "verdict", "smoke_verdict.py", run_dir, "verdict.txt")
    found = re.findall(r"^(PASS|FAIL|SKIP) (ladder-smoke|breakdown)(?:: (.*))?$", text, re.M)
    if not found:
        return [check.result("FAIL", "ladder-smoke", f"smoke_verdict.py exited {rc} without a verdict")]
    return [check.result(status, name, why, secs) for status, name, why in found]


def stage_band_table(check):
    run_dir = check.out / "ladder"
    check.progress("band-table", "ladder bands: the top rung's op breakdown per band against each peer")
    rc, secs, _ = check.run("band-table", [LADDER, "bands", run_dir, "--format", "md"], "band-table.log",
                            echo=not_a_verdict)
    text = (check.out / "logs" / "band-table.log").read_text(errors="replace")
    (check.out / "band-table.md").write_text(text)
    for plan_line in (write_gemm_plan(check, run_dir), write_attention_plan(check, run_dir)):
        if plan_line:
            print(plan_line, flush=True)
    last = text.strip().splitlines()[-1] if text.strip() else ""
    if rc == 0:
        return check.result("PASS", "band-table", last, secs)
    return check.result("SKIP" if rc == 3 else "FAIL", "band-table", last or f"exit {rc}", secs)


def top_plan(run_dir, section="gemm_plan"):
    """(cell, plan) of the last ladder rung of run_dir whose report holds a plan (its `section`), or None."""
    found = None
    for row in (run_dir_summary(run_dir) or {}).get("rows", []):
        if row.get("status") != "ok" or not row.get("report"):
            continue
        try:
            plan = json.loads((run_dir / row["report"]).read_text()).get(section)
        except (OSError, ValueError):
            continue
        if isinstance(plan, dict):
            found = (row.get("cell") or row.get("rung"), plan)
    return found


def gemm_plan_table(cell, plan):
    """The plan's sites in markdown: the choice, PyTorch's median and the chosen one's, and why."""
    lines = [f"**{cell}'s GEMM plan (--gemm-plan {plan['mode']}; {plan['source']})**", "",
             "| site | m n k | epilogue | choice | pytorch ms | chosen ms | why |", "|---|---|---|---|---:|---:|---|"]
    for s in plan["sites"]:
        ran = {c["choice"]: c["median_ms"] for c in s.get("candidates", []) if c.get("ran")}
        ms = [f"{ran[c]:.4f}" if c in ran else "-" for c in ("pytorch", s["choice"])]
        lines.append(f"| {s['site']} | {s['m']} {s['n']} {s['k']} | {s['epilogue']} | {s['choice']} | {ms[0]} | "
                     f"{ms[1]} | {s['reason']} |")
    return "\n".join(lines) + "\n"


def write_gemm_plan(check, run_dir):
    """The top rung's GEMM plan beside the band table: gemm-plan.md to read, gemm-plan.json to rerun it
    (ladder run --gemm-plan gemm-plan.json). Returns a line to print ("" when no rung has a plan)."""
    found = top_plan(run_dir)
    if not found:
        return ""
    cell, plan = found
    (check.out / "gemm-plan.md").write_text(gemm_plan_table(cell, plan))
    (check.out / "gemm-plan.json").write_text(json.dumps(plan, indent=1) + "\n")
    chosen = [s["choice"] for s in plan["sites"] if s["choice"] != "pytorch"]
    return (f"{cell}'s GEMM plan: {len(chosen)} of {len(plan['sites'])} sites off PyTorch's ops"
            f"{' (' + ', '.join(chosen) + ')' if chosen else ''}; gemm-plan.md")


def write_attention_plan(check, run_dir):
    """The top rung's attention plan (its SDPA backend, variants/planners/attention_plan.h) in attention-plan.md:
    every candidate's median, what PyTorch picks and why it lost (its verdict; none in a plan from before
    planner 2). Returns a line to print ("" when no rung has one)."""
    found = top_plan(run_dir, "attention_plan")
    if not found:
        return ""
    cell, plan = found
    lines = [f"**{cell}'s attention plan (--attention-plan {plan['mode']}; {plan['source']})**: {plan['reason']}",
             "", "| candidate | runs | median ms | verdict | times ms |", "|---|---|---:|---|---|"]
    for c in plan.get("candidates", []):
        times = " ".join(f"{t:.3f}" for t in c["ms"]) if c["ran"] else c["why_not"]
        lines.append(f"| {c['backend']} | {c['picks']} | {c['median_ms']:.4f} | {c.get('verdict', '-')} | {times} |"
                     if c["ran"] else f"| {c['backend']} | {c['picks']} | - | - | {times} |")
    key = plan["key"]
    lines += ["", f"Key: {key['device']}, torch {key['torch']}, cuDNN {key['cudnn'] or '-'}, {key['dtype']}, "
                  f"B {key['batch']} nh {key['n_head']} T {key['seq']} hs {key['head_size']}."]
    (check.out / "attention-plan.md").write_text("\n".join(lines) + "\n")
    return f"{cell}'s attention plan: {plan['choice']} ({plan['reason']}); attention-plan.md"


def stage_speed_of_light(check):
    """`ladder sol` on the ladder run: every rung's bands against the floors at the run's own ceilings."""
    run_dir = check.out / "ladder"
    check.progress("speed-of-light", "ladder sol: each rung's bands against the run's measured ceilings")
    rc, secs, _ = check.run("speed-of-light", [LADDER, "sol", run_dir, "--format", "md", "--out",
                                               check.out / "sol.md"], "speed-of-light.log", echo=not_a_verdict)
    rc_json, _, _ = check.run("speed-of-light", [LADDER, "sol", run_dir, "--format", "json", "--out",
                                                 check.out / "sol.json"], "speed-of-light-json.log", echo=not_a_verdict)
    if rc != 0 or rc_json != 0:
        return check.result("FAIL", "speed-of-light", f"ladder sol exited {rc or rc_json} (logs/speed-of-light.log)",
                            secs)
    rungs = json.loads((check.out / "sol.json").read_text()).get("rungs", {})
    above = [f"{r}/{b['band']}" for r, t in rungs.items() for b in t.get("bands", []) if b.get("floor_above_measured")]
    top = next((r for r in reversed(list(rungs)) if not r.startswith("peer-")), None)
    if top is None:
        return check.result("FAIL", "speed-of-light", "no rung in the table", secs)
    t = rungs[top]
    mem = t["ceilings"]["memory_basis"].split(":")[0]
    line = (f"{top}: floor {t['step']['floor_ms']:.2f} ms of dt {t['step']['dt_ms']:.2f} ms; largest headroom "
            f"{t['largest_headroom']['band']} {t['largest_headroom']['headroom_ms']:.2f} ms; bandwidth {mem} "
            f"({t['ceilings']['memory_gbps']:.0f} GB/s); sol.md")
    if above:
        return check.result("FAIL", "speed-of-light", "a floor above its measurement: " + ", ".join(above), secs)
    return check.result("PASS", "speed-of-light", line, secs)


def stage_qualification(check):
    run_dir = check.out / "ladder"
    refs = pathlib.Path(check.args.references)
    check.progress("qualification", f"ladder compare against the newest run of this device in {rel(refs)}")
    rc, text, secs = tool(check, "qualification", "qualify", run_dir, "qualification.txt",
                          ["--references", refs, "--exclude", check.out])
    m = re.search(r"^reference: (\S+)", text, re.M)
    if m:
        check.facts["reference"] = m.group(1)
    line = re.search(r"^(PASS|FAIL|SKIP) qualification(?:: (.*))?$", text, re.M)
    if not line:
        return check.result("FAIL", "qualification", f"scripts/qualify exited {rc} without a verdict", secs)
    return check.result(line.group(1), "qualification", line.group(2) or "", secs)


def seconds_per_process(run_dir, secs):
    reports = list(run_dir.rglob("report.json"))
    return secs / max(len(reports), 1)


def run_with_verdict(check, stage, run_dir, cmd, deadline, verdict_name, describe=None):
    rc, secs, cut = check.run(stage, cmd, f"{stage}.log", deadline)
    check.strip_traces()
    summary = run_dir_summary(run_dir)
    if summary is None:
        why = "out of time before a summary" if cut else f"ladder run exited {rc} without a summary"
        return check.result("SKIP" if cut else "FAIL", stage, f"{why} (log: {rel(check.out / 'logs' / stage)}.log)",
                            secs), summary
    vrc, text, _ = tool(check, f"{stage}-verdict", "smoke_verdict.py", run_dir, verdict_name)
    found = {name: (st, why) for st, name, why in
             re.findall(r"^(PASS|FAIL|SKIP) (ladder-smoke|breakdown)(?:: (.*))?$", text, re.M)}
    partial = f"; partial ({'out of time' if cut else summary['status']}): " \
              f"{len(summary.get('missing') or [])} cells missing" if summary["status"] != "complete" else ""
    if "ladder-smoke" not in found:
        return check.result("FAIL", stage, f"smoke_verdict.py exited {vrc} without a verdict", secs), summary
    failed = [f"{name}: {why}" for name, (st, why) in found.items() if st == "FAIL"]
    if failed:
        return check.result("FAIL", stage, "; ".join(failed) + f" ({verdict_name})" + partial, secs), summary
    status = "SKIP" if partial or found["ladder-smoke"][0] == "SKIP" else "PASS"
    why = describe(run_dir, summary) if describe else found["ladder-smoke"][1]
    return check.result(status, stage, why + partial, secs), summary


def bench_args(check):
    """`ladder bench`'s options: the device, and of the user's options those it takes too."""
    out, it = ["--device", check.args.device], iter(check.extra)
    for a in it:
        if a.split("=")[0] in ("--preset", "--batch", "--threads", "--seed"):
            out += [a] if "=" in a else [a, next(it, "")]
    return out


def gemm_sites_table(micro_json):
    """(markdown table, sites, sites where another way beat PyTorch's) from gemm_sites' micro.json."""
    times, ways = {}, []
    for b in json.loads(micro_json.read_text()).get("benchmarks", []):
        parts = b["name"].split("/")
        if parts[0] != "gemm_sites" or b.get("error_occurred") or b.get("run_type") == "aggregate":
            continue
        site, way = "/".join(parts[1:3] + parts[4:7]), parts[7]
        times.setdefault(site, {})[way] = float(b["real_time"])  # ms (time_unit ms)
        ways += [way] if way not in ways else []
    lines = ["| site (layer/epilogue/m/n/k) | " + " | ".join(f"{w} ms" for w in ways) + " | fastest |",
             "|---|" + "---:|" * len(ways) + "---|"]
    beaten = 0
    for site, t in times.items():
        fastest = min(t, key=t.get)
        beaten += fastest != "pytorch" and "pytorch" in t
        lines.append(f"| {site} | " + " | ".join(f"{t[w]:.3f}" if w in t else "-" for w in ways) +
                     f" | {fastest} |")
    return "\n".join(lines) + "\n", len(times), beaten


def run_bench(check, stage, bench_filter, min_s, what):
    """`ladder bench --benchmark_filter=bench_filter` into <stage>/micro.json, when min_s are left.
    Returns (rc, seconds, micro.json), or (the stage's SKIP or FAIL line, None, None) when it did not run,
    ran out of time or wrote no micro.json."""
    if check.left() < min_s:
        return check.result("SKIP", stage, f"out of time ({check.left():.0f} s left)"), None, None
    check.progress(stage, f"ladder bench --benchmark_filter='{bench_filter}': {what}")
    out_dir = check.out / stage
    cmd = [LADDER, "bench", *bench_args(check), f"--benchmark_filter={bench_filter}", "--benchmark_min_time=0.05",
           "--out", out_dir]
    rc, secs, cut = check.run(stage, cmd, f"{stage}.log", check.deadline, echo=lambda l: False)
    micro = out_dir / "micro.json"
    if cut or not micro.exists():
        return check.result("SKIP" if cut else "FAIL", stage,
                            "out of time" if cut else f"ladder bench exited {rc} without micro.json", secs), None, None
    return rc, secs, micro


def stage_gemm_sites(check):
    rc, secs, micro = run_bench(check, "gemm-sites", "^gemm_sites/", GEMM_SITES_MIN_S, "each GEMM site each way")
    if micro is None:
        return rc
    table, sites, beaten = gemm_sites_table(micro)
    (check.out / "gemm-sites.md").write_text(table)
    if rc != 0:
        return check.result("FAIL", "gemm-sites", f"a candidate failed its check against fp64 (exit {rc}; "
                                                  f"logs/gemm-sites.log)", secs)
    return check.result("PASS", "gemm-sites", f"{sites} sites checked and timed; another way beat PyTorch's at "
                                              f"{beaten} of them (gemm-sites.md)", secs)


def stage_kernels(check):
    """`ladder bench` of the fused kernels' families: LayerNorm, cross-entropy, and attention at the step's shape."""
    rc, secs, micro = run_bench(check, "kernels", KERNELS_FILTER, KERNELS_MIN_S, "the fused kernels")
    if micro is None:
        return rc
    rows = [b for b in json.loads(micro.read_text()).get("benchmarks", []) if b.get("run_type") != "aggregate"]
    lines = ["| benchmark | ms | check |", "|---|---:|---|"]
    for b in rows:
        ms = "-" if b.get("error_occurred") else f"{float(b['real_time']):.4f}"
        lines.append(f"| {b['name']} | {ms} | {b.get('error_message', '') or b.get('label', '')} |")
    (check.out / "kernels.md").write_text("\n".join(lines) + "\n")
    failed = [b["name"] for b in rows if b.get("error_occurred")]
    if rc != 0:
        return check.result("FAIL", "kernels", f"exit {rc}; {len(failed)} of {len(rows)} benchmarks failed "
                                               f"({', '.join(failed[:3])}; logs/kernels.log)", secs)
    return check.result("PASS", "kernels", f"{len(rows)} benchmarks checked and timed (kernels.md)", secs)


def stage_ddp(check, per_process_s):
    run_dir = check.out / "ddp"
    backend = "NCCL" if check.cuda else "Gloo"
    if check.left() < 2 * per_process_s:
        return check.result("SKIP", "ddp", f"out of time ({check.left():.0f} s left, a process takes about "
                                           f"{per_process_s:.0f} s)")
    check.progress("ddp", f"--rungs ddp as one rank on {backend}")
    roof = check.out / "ladder" / "roofline.json"
    cmd = [LADDER, "run", *shape_args(check), "--rungs", "ddp", "--nproc-per-node", "1", "--peers", "none",
           *(["--roofline", roof] if roof.exists() else []), "--out", run_dir]
    status, summary = run_with_verdict(check, "ddp", run_dir, cmd, check.deadline, "ddp-verdict.txt",
                                       describe=describe_ddp)
    return status


def describe_ddp(run_dir, _summary):
    """What the one-rank ddp run did, from its report: the backend's all-reduce and its parity."""
    try:
        report = json.loads((run_dir / "ddp" / "report.json").read_text())
    except (OSError, ValueError):
        return "no ddp report"
    sw = (report.get("switches") or {}).get("ddp") or {}
    parity = report.get("parity") or {}
    return (f"{report.get('world_size', '?')} rank: {sw.get('mechanism', '?')}; parity {parity.get('status')} "
            f"against one process reading the same rows ({parity.get('reason') or '-'})")


@functools.lru_cache(maxsize=None)
def fused_parts():
    """The fused group's parts, from the build's own declarations (`ladder switches`)."""
    table = capture([str(LADDER), "switches"])
    return [m.group(1) for m in re.finditer(r"^\| `([^`]+)` \| part of `fused`", table, re.M)]


def stage_ablation(check, per_process_s):
    run_dir = check.out / "ablation"
    if not fused_parts():
        return check.result("FAIL", "ablation", "`ladder switches` names no part of fused")
    if unknown := [p for p in ablation_parts(check) if p not in fused_parts()]:
        return check.result("FAIL", "ablation", f"--ablation names {', '.join(unknown)}: not a part of fused "
                                                f"(its parts: {', '.join(fused_parts())})")
    cells = ablation_cells(check)
    plan_args = ["--rungs", ",".join(cells), "--peers", "none"]
    one, two = plan_processes(check, plan_args, 1), plan_processes(check, plan_args, 2)
    rounds = 2 if two is not None and check.left() > two * per_process_s else 1
    if check.left() < 2 * per_process_s:
        return check.result("SKIP", "ablation", f"out of time ({check.left():.0f} s left; {one or '?'} processes "
                                                f"of about {per_process_s:.0f} s each)")
    check.progress("ablation", f"the fused parts at the top, {len(cells)} cells x {rounds} round(s), until the "
                               f"budget's end")
    roof = check.out / "ladder" / "roofline.json"
    cmd = [LADDER, "run", *shape_args(check), "--rungs", ",".join(cells), "--peers", "none", "--repeat",
           str(rounds), *(["--roofline", roof] if roof.exists() else []), "--out", run_dir]
    status, summary = run_with_verdict(check, "ablation", run_dir, cmd, check.deadline, "ablation-verdict.txt",
                                       describe=describe_ablation)
    if summary is not None:
        rc, secs, _ = check.run("ablation-table", [sys.executable, SCRIPTS / "ablation-table", run_dir, "fused"],
                                "ablation-table.log", env={"LADDER_BUILD_DIR": str(BUILD)})
        shutil.copy(check.out / "logs" / "ablation-table.log", check.out / "ablation-table.md")
    return status


def stage_autotune_peer(check):
    """The top rung against torch.compile's max-autotune peer, in a run of its own: its first process
    autotunes every GEMM for minutes, which would hold up the ladder's rounds."""
    need = check.args.autotune_min * 60
    if not check.cuda:
        return check.result("SKIP", "autotune-peer", "CUDA only: max-autotune times Triton GEMM templates")
    if check.left() < need:
        return check.result("SKIP", "autotune-peer", f"out of time ({check.left():.0f} s left; it needs about "
                                                     f"{need:.0f} s, --autotune-min)")
    run_dir = check.out / "autotune"
    check.progress("autotune-peer", "fused-adamw against the compile-autotune peer, 2 rounds")
    roof = check.out / "ladder" / "roofline.json"
    cmd = [LADDER, "run", *shape_args(check), "--rungs", "fused-adamw", "--peers", "compile-autotune", "--repeat",
           "2", *(["--roofline", roof] if roof.exists() else []), "--out", run_dir]
    rc, secs, cut = check.run("autotune-peer", cmd, "autotune-peer.log", check.deadline - 5)
    check.strip_traces()
    summary = run_dir_summary(run_dir)
    row = next((r for r in (summary or {}).get("rows", []) if r.get("cell") == "fused-adamw"), None)
    if row is None or row.get("speedup_vs_compile") is None:
        return check.result("SKIP" if cut else "FAIL", "autotune-peer",
                            ("out of time: " if cut else f"exit {rc}: ") + "no ratio of fused-adamw to the "
                            "compile-autotune peer (logs/autotune-peer.log)", secs)
    lo, hi = row.get("speedup_vs_compile_interval") or (None, None)
    interval = f" [{lo:.2f}, {hi:.2f}]" if lo is not None else ""
    return check.result("PASS", "autotune-peer", f"fused-adamw {row['speedup_vs_compile']:.2f}x{interval} of "
                                                 f"{row.get('speedup_vs_compile_against')} (tokens/s)", secs)


def describe_ablation(_run_dir, summary):
    """How many cells ran, which could not (a CUDA-only part on a CPU), in how many rounds."""
    rows = summary["rows"]
    ran = [r for r in rows if r["status"] == "ok"]
    not_here = [r["cell"] for r in rows if r["status"] == "not_runnable"]
    rounds = max((max(r.get("rounds") or [1]) for r in ran), default=0)
    return (f"{len(ran)} cells ran and held parity in {rounds} round(s)" +
            (f"; not runnable here: {', '.join(not_here)}" if not_here else "") + "; table in ablation-table.md")


# ---- the check --------------------------------------------------------------------------
def parse_args(argv):
    ap = argparse.ArgumentParser(prog="scripts/gpu-smoke", add_help=True,
                                 description="Check and qualify a GPU node; see scripts/gpu_check.py.")
    ap.add_argument("--time-budget", type=float, default=10.0, metavar="MIN",
                    help="minutes for the whole check, build included (default 10)")
    ap.add_argument("--device", default=None, help="cuda, cuda:N or cpu (the dry run); default cuda")
    ap.add_argument("--peers", default=None, help="peers of the ladder run (default eager,compile; eager on a CPU)")
    ap.add_argument("--autotune-min", type=float, default=AUTOTUNE_MIN_S / 60, metavar="MIN",
                    help="the autotune-peer stage runs when this many minutes are left (default 7)")
    ap.add_argument("--rungs", default=None,
                    help="rungs of the ladder run (default the whole ladder; the band table needs fused-adamw)")
    ap.add_argument("--ablation", default=None, metavar="PARTS",
                    help="the fused parts the ablation stage takes out of the top rung, in this order "
                         "(default every part, as `ladder switches` lists them): the first ones get the time")
    ap.add_argument("--results-dir", default=str(ROOT / "reports" / "results"),
                    help="where <date>-<device>/ is written (default reports/results)")
    ap.add_argument("--references", default=None,
                    help="where qualification looks for earlier runs (default: --results-dir)")
    args, extra = ap.parse_known_args(argv)
    if not args.time_budget > 0:
        ap.error(f"--time-budget: got {args.time_budget:g}, expected minutes > 0")
    if args.ablation is not None and not re.fullmatch(r"[a-z0-9-]+(,[a-z0-9-]+)*", args.ablation):
        ap.error(f"--ablation: got '{args.ablation}', expected part names separated by commas (fused-ln,cast-cache)")
    if args.device is not None and not re.fullmatch(r"cpu|cuda(:\d+)?", args.device):
        ap.error(f"--device: got '{args.device}', expected cuda, cuda:N or cpu")
    args.references = args.references or args.results_dir
    args.argv = argv
    return args, extra


def main(argv):
    args, extra = parse_args(argv)
    if args.device is None:
        gpus = visible_gpus()
        if not gpus:
            print("gpu-smoke: no CUDA device is visible (nvidia-smi lists none); `scripts/gpu-smoke --device cpu "
                  "--preset tiny` is the dry run of every stage on this CPU", file=sys.stderr)
            return 2
        args.device = "cuda"
    check = Check(args, extra)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, check.on_signal)
    name = describe_device(check)
    check.make_results_dir(name)
    print(f"gpu-smoke: {check.facts['device']}; {args.time_budget:g} min; results in {rel(check.out)}", flush=True)

    def stages():
        if stage_build(check) != "PASS":
            return
        stage_gtest(check, "unit-tests", CUDA_TESTS if check.cuda else CPU_DRY_RUN_TESTS,
                    "CUDA unit tests (ladder_tests)" if check.cuda else "CUDA unit tests (ladder_tests; on a CPU "
                    "those named Cuda skip)", on_failed=lambda failed: take_kernel_fallbacks(check, failed))
        if check.interrupted:
            return
        stage_gtest(check, "nvtx-trees", "Nvtx.*", "NVTX range-tree tests")
        if check.interrupted:
            return
        t0 = time.monotonic()
        stage_ladder(check)
        per_process_s = seconds_per_process(check.out / "ladder", time.monotonic() - t0)
        if check.interrupted:
            return
        stage_verdicts(check)
        if run_dir_summary(check.out / "ladder") is not None:
            stage_band_table(check)
            stage_speed_of_light(check)
            stage_qualification(check)
        else:
            for s in ("band-table", "speed-of-light", "qualification"):
                check.result("SKIP", s, "no ladder run to read")
        if check.interrupted:
            return
        stage_ddp(check, per_process_s)
        if check.interrupted:
            return
        stage_gemm_sites(check)
        if check.interrupted:
            return
        stage_kernels(check)
        if check.interrupted:
            return
        stage_autotune_peer(check)
        if check.interrupted:
            return
        stage_ablation(check, per_process_s)

    stages()
    # Every stage has its line: those not reached say why.
    reported = {l.split(":")[0].split()[1] for l, _ in check.lines}
    why = f"not reached: interrupted ({check.interrupted})" if check.interrupted else "not reached: the build failed"
    for stage in STAGES:
        if stage not in reported:
            check.result("SKIP", stage, why)
    check.strip_traces()
    counts = {s: sum(1 for l, _ in check.lines if l.startswith(s + " ")) for s in ("PASS", "FAIL", "SKIP")}
    check.status = (f"interrupted ({check.interrupted})" if check.interrupted else
                    f"finished: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    check.write_readme()
    print(f"gpu-smoke: {counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped in "
          f"{fmt_min(check.elapsed())} (results: {rel(check.out)})", flush=True)
    if check.interrupted:
        return 130
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
