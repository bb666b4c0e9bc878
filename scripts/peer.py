#!/usr/bin/env python3
"""A PyTorch peer of ladder's top single-process rung, measured in the same run.

`ladder run --peers eager,compile` runs this script once per peer, after the
rungs, in a child process: the same GPT-2 (scripts/reference.py's model, GPT-2
init, the same synthetic tokens or shards, AdamW groups, LR schedule and grad
clip) with the switches of the cell's config (those of `fused-adamw`):
TF32 matmuls, bf16 autocast, SDPA causal attention, vocabulary padded to a
multiple of 128 (padding logits never enter the loss, as in ladder), fused
AdamW. The peers differ only in how PyTorch runs the step: each is one
declaration in bench/run/peers.cpp (its name, what it is, whether its own fusion
stands in for ladder's fused rung), which this script reads from `ladder
peers --json`, and one measuring function here, registered under that name
with @peer: it takes the forward-and-loss function and returns the one the
step runs (`ladder peers` lists them).

What the report says of the machine (host, OS, CPU, device, library
versions) is ladder's own description (`ladder peers --environment DEVICE`,
bench/measure/device/environment.h), with what only this process knows put over it: its
torch, its threads, its Python.

Timing follows the harness (bench/measure/harness/harness.cpp): each step timed alone (CUDA
events and a synchronise per step on CUDA, a steady clock on CPU), with its
memory peaks: the CUDA caching allocator's, or the process's VmHWM on CPU
(reset before each step), with the same glibc malloc settings as a C++ CPU
rung. It runs as many steps as ladder's warm-up rule may take (warmup_max)
plus the measured ones, all alike, and records each.

It writes a partial rung report (--out): what this process is and one
record per step. `ladder run` makes <cell>/report.json from it with the
builder rungs use (bench/measure/report/rung_report.h, reports/rung_report.schema.json):
the warm-up rule decides which records are measured, and the summary
statistics, timing, memory, FLOPs and MFU (bench/measure/roofline/mfu.h, against the run's
roofline.json), the op breakdown (from the Kineto trace of BREAKDOWN_STEPS
extra profiled steps, peer_breakdown.trace.json beside the report) and the
parity note are computed there, in one place, exactly as for a rung.

Output: `ladder run` appends this process's stdout and stderr (PyTorch's
warnings, a traceback) to the cell's output.log and hands it its own stderr
as --progress-fd, where the progress lines alone go.

Exit: 0 measured; 1 the peer failed (the report says why: a compile error,
an exception); 2 bad input; 3 skipped (this Python has no usable torch).
"""
import argparse
import ctypes
import datetime
import inspect
import json
import os
import platform
import sys
import time
import traceback

EXIT_FAILED, EXIT_BAD_INPUT, EXIT_SKIPPED = 1, 2, 3
BREAKDOWN_STEPS = 2  # profiled after the measured ones, for the op breakdown
BREAKDOWN_TRACE = "peer_breakdown.trace.json"  # beside the report: the Kineto trace of those steps
TEST_FAIL_ENV = "LADDER_TEST_PEER_FAIL"  # test-only: names a peer that raises at its first step
# Test-only, as ladder's (bench/measure/harness/harness.h): every step waits this share of its own time more, busy, inside
# its timed region. `ladder run` sets it for the one process that P@CELL[@ROUND] aims at.
TEST_SLOWDOWN_ENV = "LADDER_TEST_SLOWDOWN_PCT"


def test_slowdown_pct():
    """The hook's percentage; 0 when unset. Exits 2 (bad input) on anything but a number in [0, 1000]."""
    v = os.environ.get(TEST_SLOWDOWN_ENV, "")
    if not v:
        return 0.0
    try:
        pct = float(v)
    except ValueError:
        pct = -1.0
    if not 0 <= pct <= 1000:
        print(f"peer.py: {TEST_SLOWDOWN_ENV}: got '{v}', expected a percentage in [0, 1000] (ladder run passes a "
              f"plain one to the process P@CELL@ROUND aims at)", file=sys.stderr)
        sys.exit(EXIT_BAD_INPUT)
    return pct


def now_iso():
    t = datetime.datetime.now(datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def write_atomically(path, obj):
    """A temporary file, fsync, rename: never a half-written report (profiler/common/atomic_file.h)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, allow_nan=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


class Peer:
    """One run: the config of the cell, the report header, and how it ended."""

    def __init__(self, args, cfg):
        self.args, self.cfg, self.name = args, cfg, args.peer
        self.started_at = now_iso()
        self.torch_version = None

    def header(self, status):
        return {
            "schema_version": 3,  # reports/model/report/report.h kSchemaVersion
            "kind": "ladder.rung_report",
            "run_id": self.args.run_id,
            "rung": self.cfg["rung"],
            "status": status,
            "started_at": self.started_at,
            "finished_at": now_iso(),
            "suite": {"name": "ladder", "version": self.args.suite_version,
                      "git_commit": self.args.git_commit, "argv": sys.argv},
            "config": self.cfg,
            "peer": {"name": self.name, "program": "scripts/peer.py", "python": sys.executable,
                     "python_version": platform.python_version(), "torch_version": self.torch_version,
                     "what": self.args.declared["what"]},
        }

    def write_failure(self, status, reason, message, phase, step=None):
        report = self.header(status)
        report["failure"] = {"reason": reason, "message": message[-2000:], "phase": phase}
        if step is not None:
            report["failure"]["step"] = step
        write_atomically(self.args.out, report)


# ---------------------------------------------------------------- environment


def ladder_peers(ladder, device):
    """`ladder peers --json --environment DEVICE`: the declared peers, and the machine as ladder's
    reports describe it (bench/measure/device/environment.h), read in a process of ladder's own."""
    import subprocess
    p = subprocess.run([ladder, "peers", "--json", "--environment", device], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{ladder} peers --json --environment {device}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def config_line(torch, *needles):
    """The first line of torch.__config__.show() that contains a needle (GCC, clang)."""
    for line in torch.__config__.show().splitlines():
        line = line.strip().lstrip("- ").strip()
        if any(n in line for n in needles):
            return line
    return "unknown"


def environment(torch, machine):
    """ladder's description of the machine, with this process's own over it: its torch, threads, Python."""
    env = json.loads(json.dumps(machine))
    env["threads"] = {"intra_op": torch.get_num_threads(), "inter_op": torch.get_num_interop_threads()}
    env.setdefault("versions", {})["libtorch"] = torch.__version__
    env["compiler"] = f"Python {platform.python_version()}; torch built with {config_line(torch, 'GCC', 'clang')}"
    env["build_type"] = "torch wheel (Python)"
    return env


# ---------------------------------------------------------------- memory


def keep_cpu_memory_in_process():
    """bench/measure/device/cpu_allocator.cpp's mallopt settings, so a CPU peer's large tensors stay in the heap too."""
    M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_MAX = -1, -2, -4
    try:
        libc = ctypes.CDLL("libc.so.6")
        applied = (libc.mallopt(M_MMAP_MAX, 0) == 1) and (libc.mallopt(M_TRIM_THRESHOLD, -1) == 1) and \
                  (libc.mallopt(M_TOP_PAD, 256 << 20) == 1)
    except OSError:
        applied = False
    return {"allocator": "glibc malloc", "settings": "mallopt M_MMAP_MAX=0, M_TRIM_THRESHOLD=max, M_TOP_PAD=256 MiB",
            "applied": applied,
            "why": "as a C++ CPU rung (bench/measure/device/cpu_allocator.h): freed tensors stay in the process and later "
                   "steps reuse them"}


def proc_status_bytes(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def reset_rss_peak():
    """Writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0), as bench/measure/device/device.cpp."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def host_steal_ms():
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()
        return int(fields[8]) * 1000.0 / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


# ---------------------------------------------------------------- the step


def build(torch, ref, cfg, device, peer_name, bf16_off_because=None):
    """Model, optimizer and the step of the cell's switches; returns (step_fn, model, switches, model_vocab).

    Each part records what it made of its switches in `switches`, which the
    report lists in the order they are added: tf32, bf16, flash, vocab-pad,
    fused-adamw, fused, then the config's others."""
    sw = cfg["switches"]
    m = dict(cfg["model"])
    V = m["vocab_size"]
    if sw["vocab-pad"]:
        m["vocab_size"] = (V + 127) // 128 * 128  # variants/config/config.h model_vocab()
    switches = {}
    autocast = set_precision(torch, sw, device, bf16_off_because, switches)
    model = make_model(torch, ref, cfg, m, device, switches)
    params = list(model.parameters())
    optimizer = make_optimizer(torch, params, cfg["train"], sw, switches)
    forward_loss = make_forward_loss(torch, model, autocast, V, peer_name, sw["fused"], switches)
    name_every_switch(sw, switches)
    return make_step(torch, ref, cfg, forward_loss, params, optimizer), model, switches, m["vocab_size"]


def matmul_error(torch, device):
    """Max relative difference of a fixed 256x256 fp32 matmul against its float64 result (as
    variants/config/precision.cpp's probe: fp32 ~1e-7, TF32 ~1e-3, bf16 ~1e-2)."""
    g = torch.Generator().manual_seed(7)
    a, b = torch.randn(256, 256, generator=g), torch.randn(256, 256, generator=g)
    exact = a.double() @ b.double()
    got = (a.to(device) @ b.to(device)).cpu().double()
    return ((got - exact).abs().max() / exact.abs().max()).item()


def set_tf32(torch, device):
    """CUDA: TF32 in cuBLAS and cuDNN, through the per-backend API as ladder sets it
    (variants/config/precision.cpp), probed."""
    torch.backends.cuda.matmul.fp32_precision = "tf32"
    torch.backends.cudnn.conv.fp32_precision = "tf32"
    err = matmul_error(torch, device)
    ok = err > 1e-5
    return {"enabled": True, "effective": ok,
            "mechanism": "torch.backends.cuda.matmul.fp32_precision = 'tf32', cudnn.conv.fp32_precision = 'tf32'",
            "reason": f"probe matmul error {err:.1e}: TF32 tensor cores in use" if ok else
            f"probe matmul error {err:.1e} unchanged from fp32: this GPU has no TF32 (needs sm_80+)"}


def set_cpu_fp32_math(torch):
    """CPU: oneDNN's fp32-math mode, 'tf32' then 'bf16', the first that changes a probe matmul: what
    ladder's tf32 switch does on a CPU (variants/config/precision.cpp), so the peers and the rungs run their
    fp32 matmuls alike (on a CPU with AMX or avx512_bf16 a mode takes effect)."""
    tried = []
    for mode in ("tf32", "bf16"):
        try:
            torch.backends.mkldnn.matmul.fp32_precision = mode
            err = matmul_error(torch, torch.device("cpu"))
        except Exception as e:  # a mode oneDNN cannot run here
            tried.append(f"'{mode}' rejected ({str(e).splitlines()[0][:120]})")
            continue
        if err > 1e-5:
            return {"enabled": True, "effective": True, "mechanism": f"oneDNN fp32 matmul precision '{mode}'",
                    "reason": f"probe matmul error {err:.1e}: oneDNN runs fp32 matmuls in {mode}"}
        tried.append(f"'{mode}' accepted but the probe matmul is unchanged (error {err:.1e})")
    torch.backends.mkldnn.matmul.fp32_precision = "none"
    return {"enabled": True, "effective": False, "applicable": False,
            "mechanism": "oneDNN fp32 matmul precision (tf32, then bf16)",
            "reason": "no reduced-precision fp32 matmul mode took effect on this CPU: " + "; ".join(tried)}


def set_precision(torch, sw, device, bf16_off_because, switches):
    """tf32 and bf16: sets the matmul precision and returns a factory of the bf16 autocast context
    around forward and loss, or None where there is none (bf16 off, or left off on this CPU)."""
    cuda = device.type == "cuda"
    if sw["tf32"]:
        switches["tf32"] = set_tf32(torch, device) if cuda else set_cpu_fp32_math(torch)
    bf16_off = bf16_off_because if sw["bf16"] and not cuda else None
    ctx = (lambda: torch.autocast(device.type, dtype=torch.bfloat16)) if sw["bf16"] and not bf16_off else None
    if bf16_off:
        switches["bf16"] = {"enabled": True, "effective": False, "applicable": False,
                            "mechanism": "none: autocast left off, the matmuls run in fp32", "reason": bf16_off}
    elif sw["bf16"]:
        ok = not cuda or torch.cuda.is_bf16_supported()
        switches["bf16"] = {"enabled": True, "effective": ok,
                            "mechanism": f"torch.autocast('{device.type}', dtype=torch.bfloat16) around forward and loss",
                            "reason": "bf16 autocast" if ok else "this GPU has no bf16"}
    return ctx


def make_model(torch, ref, cfg, m, device, switches):
    """reference.py's GPT of the model config m (its vocabulary padded or not), SDPA attention
    under flash, GPT-2 init from the cell's seed, on the device; records flash and vocab-pad."""
    sw, V = cfg["switches"], cfg["model"]["vocab_size"]
    torch.manual_seed(cfg["seed"])
    model = ref.GPT(m)
    if sw["flash"]:
        for block in model.h:
            block.attn.__class__ = SdpaAttention(torch, ref)
        switches["flash"] = {"enabled": True, "effective": True,
                             "mechanism": "F.scaled_dot_product_attention(is_causal=True)",
                             "reason": "the backend PyTorch picks"}
    ref.init_gpt2_weights(model, m["n_layer"], cfg["seed"])
    model.to(device)
    if sw["vocab-pad"]:
        switches["vocab-pad"] = {"enabled": True, "effective": m["vocab_size"] != V,
                                 "mechanism": f"wte has {m['vocab_size']} rows; logits sliced to V={V} before the loss",
                                 "reason": f"V {V} -> {m['vocab_size']}" if m["vocab_size"] != V
                                 else "V is already a multiple of 128"}
    return model


def make_optimizer(torch, params, t, sw, switches):
    """AdamW over reference.py's two parameter groups (weight decay on the 2-D ones only), fused under
    fused-adamw."""
    groups = [{"params": [p for p in params if p.dim() >= 2], "weight_decay": t["weight_decay"]},
              {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
    kw = {"fused": True} if sw["fused-adamw"] else {"foreach": False}
    optimizer = torch.optim.AdamW(groups, lr=t["max_lr"], betas=tuple(t["betas"]), eps=t["eps"], **kw)
    if sw["fused-adamw"]:
        switches["fused-adamw"] = {"enabled": True, "effective": True,
                                   "mechanism": "torch.optim.AdamW(fused=True)",
                                   "reason": "one fused kernel per parameter group"}
    return optimizer


# ---------------------------------------------------------------- the peers

MEASURING = {}  # peer name -> its measuring function (the declarations: bench/run/peers.cpp)


def peer(name):
    """Registers a peer's measuring function: (torch, forward_loss) -> (the forward-and-loss the step
    runs, what the peer's `fused` switch says: its reason, and its mechanism where it fuses)."""
    def register(fn):
        MEASURING[name] = fn
        return fn
    return register


@peer("eager")
def eager(torch, forward_loss):
    return forward_loss, {"reason": "eager: no fusion, PyTorch runs each op (ladder's fused ops have no eager "
                                    "counterpart)"}


def name_cpu_kernels():
    """Inductor's generated C++ kernels, each in a profiler range of its own name
    (graph_0_cpp_fused_native_layer_norm_3), so that the op breakdown counts each in the band of
    the ops it fuses, as it does a Triton kernel on a GPU; without it their time is the self time
    of the graph's "## Call CompiledFxGraph ##" range, in idle/other. The range costs one check of
    whether a profiler is on per kernel call. Returns what the mechanism says of it."""
    import torch._inductor.config as inductor_config  # noqa: PLC0415 - not imported by `import torch`
    inductor_config.cpp.enable_kernel_profile = True
    return "; its C++ kernels named in the profiler (inductor config cpp.enable_kernel_profile)"


@peer("compile")
def compiled(torch, forward_loss):
    named = name_cpu_kernels()
    return torch.compile(forward_loss), {"reason": "torch.compile (inductor): generated fused kernels for forward "
                                                   "and backward",
                                         "mechanism": "torch.compile(forward + loss), inductor backend" + named}


@peer("compile-autotune")
def compiled_autotuned(torch, forward_loss):
    mode = "max-autotune-no-cudagraphs"
    named = name_cpu_kernels()
    return torch.compile(forward_loss, mode=mode), {
        "reason": "torch.compile (inductor, max-autotune): fused kernels, and each GEMM's kernel chosen by timing "
                  "inductor's Triton templates against cuBLAS",
        "mechanism": f"torch.compile(forward + loss, mode='{mode}'), inductor backend" + named}


def make_forward_loss(torch, model, autocast, V, peer_name, fused, switches):
    """Forward and loss over the first V logits, as the peer's measuring function runs it (what
    stands in for ladder's fused rung: records fused)."""
    import torch.nn.functional as F

    def forward_loss(x, y):  # (B, T), (B, T) -> ()
        if autocast is not None:
            with autocast():
                logits = model(x)  # (B, T, Vp)
        else:
            logits = model(x)
        logits = logits[..., :V]  # (B, T, V): padding logits never enter the softmax
        return F.cross_entropy(logits.reshape(-1, V).float(), y.reshape(-1))

    forward_loss, said = MEASURING[peer_name](torch, forward_loss)
    switches["fused"] = {"enabled": fused, "reason": said["reason"]}
    if fused:
        switches["fused"].update(effective=True, mechanism=said.get("mechanism", "none"))
    return forward_loss


def name_every_switch(sw, switches):
    """Every switch the config names (ladder's declarations), under the same
    name in the report; the fused rung's parts are ladder's own mechanisms,
    which torch.compile replaces as a whole: on in the config, not
    applicable in the peer (a note in the verdict, never a failure)."""
    for name, on in sw.items():
        if on and name not in switches:
            switches[name] = {"enabled": True, "effective": False, "applicable": False, "mechanism": "none",
                              "reason": "ladder's own mechanism: the peer has none (torch.compile stands in for "
                                        "the fused rung's parts)"}
        switches.setdefault(name, {"enabled": False, "reason": f"{name} is off in the peer's config"})


def make_step(torch, ref, cfg, forward_loss, params, optimizer):
    """The optimizer step: forward and loss, backward, gradient clip, the LR schedule, AdamW."""
    t = cfg["train"]
    decay = t["lr_decay_steps"] if t["lr_decay_steps"] > 0 else cfg["warmup"] + cfg["steps"]
    clip = t["grad_clip"]

    record = torch.profiler.record_function

    def step(i, x, y):
        """One optimizer step on device tensors; returns (loss, grad_norm, lr) still on the device.
        Its phases are ranges named as a rung's (forward, backward, optimizer): the op breakdown
        counts everything inside "optimizer" as optimizer, as it does for a rung."""
        with record("forward"):
            loss = forward_loss(x, y)
        with record("backward"):
            loss.backward()
        with record("optimizer"):
            norm = torch.nn.utils.clip_grad_norm_(params, clip, foreach=True)
            lr = ref.learning_rate(t, i, decay)
            for g in optimizer.param_groups:
                g["lr"] = lr
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss.detach(), norm.detach(), lr

    return step


def SdpaAttention(torch, ref):
    """reference.py's attention with F.scaled_dot_product_attention(is_causal=True): same parameters."""
    import torch.nn.functional as F

    class Sdpa(ref.CausalSelfAttention):
        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
            hs = C // self.n_head
            q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
            k = k.view(B, T, self.n_head, hs).transpose(1, 2)
            v = v.view(B, T, self.n_head, hs).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    return Sdpa


def use_cuda_device(torch, device):
    """Makes `device` ("cuda", "cuda:1", as ladder's --device names it) the
    current CUDA device and returns it with its index. torch.cuda.set_device
    takes an index (torch >= 2.11 refuses a device without one: "cuda" is
    ladder's first visible GPU, index 0)."""
    index = 0 if device.index is None else device.index
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def measure(peer, torch, ref):
    """Runs and records the steps; ladder applies its own rules to them.

    Every step is timed alike, with its memory peaks, and recorded: the
    warm-up rule's candidates (up to warmup_max) and then the measured ones.
    ladder's report builder (bench/measure/report/rung_report.h) decides where warm-up ended
    with the harness's rule (bench/measure/harness/harness.h warmup_done) and computes the
    summary, timing, memory, FLOPs and MFU, as for a rung. Returns the exit code.
    """
    cfg = peer.cfg
    device = torch.device(cfg["device"])
    cuda = device.type == "cuda"
    cpu_allocator = None if cuda else keep_cpu_memory_in_process()
    threads = cfg["threads"] or (os.cpu_count() or 1)
    torch.set_num_threads(threads)
    if cuda:
        device = use_cuda_device(torch, device)
    steps = TimedSteps(torch, peer, device)  # also where a failure happened: its phase and step
    try:
        built = build(torch, ref, cfg, device, peer.name, peer.args.bf16_off_because)
        steps.prepare(built[0], ref.make_batches({**cfg, "data": cfg.get("data") or {}}))
        steps.run()
        op_breakdown = profile_breakdown(torch, peer, cuda, steps.one_step,
                                         [steps.next_batch(steps.total + k) for k in range(1 + BREAKDOWN_STEPS)],
                                         steps.total)
    except torch.cuda.OutOfMemoryError as e:
        peer.write_failure("oom", "out of memory", str(e), steps.phase, steps.step_no)
        return EXIT_FAILED
    except Exception as e:  # noqa: BLE001 - a compile error, an exception in the step: the peer failed
        compiler = type(e).__module__.startswith(("torch._dynamo", "torch._inductor"))
        reason = "torch.compile failed" if compiler else "exception"
        peer.write_failure("failed", reason, "".join(traceback.format_exception(e))[-2000:], steps.phase,
                           steps.step_no)
        print(f"peer.py: {peer.name}: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_FAILED

    for r in steps.records:
        if not (abs(r["loss"]) < float("inf") and abs(r["grad_norm"]) < float("inf")):
            peer.write_failure("diverged", "diverged", f"loss {r['loss']}, gradient norm {r['grad_norm']}",
                               "step", r["step"])
            return EXIT_FAILED
    write_atomically(peer.args.out, measured_report(peer, torch, steps, built, cpu_allocator, op_breakdown))
    return 0


class TimedSteps:
    """The steps of one run, each timed alone as the harness times a rung's (bench/measure/harness/harness.cpp),
    and where the run is (phase, step_no): what a failure report says."""

    def __init__(self, torch, peer, device):
        self.torch, self.peer, self.device = torch, peer, device
        self.cuda = device.type == "cuda"
        self.phase, self.step_no = "setup", None

    def prepare(self, step, batches):
        """The step function (build's) and the batches (reference.py's make_batches)."""
        cfg = self.peer.cfg
        self.step, self.batches = step, batches
        self.tokens = cfg["batch"] * cfg["seq"]
        self.fail_at_first_step = os.environ.get(TEST_FAIL_ENV, "") == self.peer.name
        self.slowdown_pct = test_slowdown_pct()
        # The most steps ladder's warm-up rule can take, then the measured ones.
        until_stable = cfg.get("warmup_max", cfg["warmup"]) > cfg["warmup"]
        self.total = (cfg["warmup_max"] if until_stable else cfg["warmup"]) + cfg["steps"]

    def next_batch(self, i):
        """Made before the step's timer starts; the copy is inside it."""
        x, y = self.batches(i)
        return (x.pin_memory(), y.pin_memory()) if self.cuda else (x, y)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def run(self):
        """Runs the total steps, all alike, into self.records, each with the host clock and the
        steal counter; notes the process's memory peak reset and the steal counter before them."""
        if self.cuda:
            self.torch.cuda.empty_cache()
        self.sync()
        self.rss_reset = reset_rss_peak()
        self.steal_before, wall_before = host_steal_ms(), time.perf_counter()
        self.records = []
        for i in range(self.total):
            self.records.append(self.one_step(i, self.next_batch(i)))
            # The host clock and the steal counter once the step's bookkeeping
            # is done: ladder takes the measured steps' wall time from them.
            self.records[-1]["wall_ms"] = (time.perf_counter() - wall_before) * 1e3
            self.records[-1]["steal_ms"] = host_steal_ms()
        self.sync()

    def one_step(self, i, batch, profiled=False):
        """Step i on a batch (next_batch's), timed with its memory peaks; returns its record."""
        torch, device, cuda = self.torch, self.device, self.cuda
        self.step_no, self.phase = i, "op breakdown" if profiled else "step"
        if self.fail_at_first_step:
            raise RuntimeError(f"{TEST_FAIL_ENV}={self.peer.name} (test hook): failing on purpose")
        if cuda:
            torch.cuda.reset_peak_memory_stats(device)
            before = torch.cuda.memory_stats(device)
        else:
            reset_rss_peak()
        self.sync()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        t0 = time.perf_counter()
        x = batch[0].to(device, non_blocking=True)
        y = batch[1].to(device, non_blocking=True)
        data_ms = (time.perf_counter() - t0) * 1e3
        loss, norm, lr = self.step(i, x, y)
        if self.slowdown_pct > 0 and not profiled:  # the test hook: busy, so the core does not idle and clock down
            self.sync()
            until = time.perf_counter() + (time.perf_counter() - t0) * self.slowdown_pct / 100
            while time.perf_counter() < until:
                pass
        if cuda:
            end.record()
            end.synchronize()
            dt = start.elapsed_time(end)
        else:
            dt = (time.perf_counter() - t0) * 1e3
        rec = {"step": i, "dt_ms": dt, "tokens": self.tokens, "loss": loss.item(), "grad_norm": norm.item(),
               "lr": lr, "data_ms": data_ms, "peak_rss_bytes": proc_status_bytes("VmHWM")}
        if cuda:
            rec.update(cuda_memory_peaks(torch.cuda.memory_stats(device), before))
        if self.peer.args.progress and not profiled:
            print(f"[{self.peer.args.label}] step {i + 1:>4}/{self.total} | dt {dt:9.2f} ms | "
                  f"{self.tokens / (dt * 1e-3):9.0f} tok/s | loss {rec['loss']:.4f}", file=self.peer.args.progress,
                  flush=True)
        return rec


def cuda_memory_peaks(s, before):
    """A step's record of the CUDA caching allocator: its peaks (reset before the step) from its
    stats after it, and the retries and OOMs since `before`, its stats at the start."""
    return dict(peak_active_bytes=s.get("active_bytes.all.peak", 0),
                peak_reserved_bytes=s.get("reserved_bytes.all.peak", 0),
                peak_allocated_bytes=s.get("allocated_bytes.all.peak", 0),
                alloc_retries=s.get("num_alloc_retries", 0) - before.get("num_alloc_retries", 0),
                ooms=s.get("num_ooms", 0) - before.get("num_ooms", 0))


def measured_report(peer, torch, steps, built, cpu_allocator, op_breakdown):
    """The partial report of a run that measured: the header, what ran where, and the records."""
    _, model, switches, model_vocab = built
    cfg, cuda, records = peer.cfg, steps.cuda, steps.records
    n_params = sum(p.numel() for p in model.parameters())
    data = {"kind": "synthetic", "prefetch": {"enabled": True, "mode": "each batch made before its step's timer "
                                              "starts (outside dt); its copy to the device is inside dt",
                                              "batches_ready_on_request": len(records),
                                              "batches_not_predicted": 0},
            "batches_consumed": len(records), "tokens_consumed": steps.tokens * len(records),
            "pinned_memory": cuda, "seed": cfg["seed"], "vocab_size": cfg["model"]["vocab_size"], "rank": 0,
            "world_size": 1, "fixed_batch": cfg["fixed_batch"],
            "generator": "splitmix64 counter hash, uniform over [0, vocab_size) (scripts/reference.py)"}
    if (cfg.get("data") or {}).get("path"):
        data = shard_data(cfg, data)
    report = peer.header("ok")
    report.update({
        "environment": environment(torch, peer.args.machine),
        "switches": switches,
        "data": data,
        "model": {"n_params": n_params, "n_params_without_wpe": n_params - model.wpe.weight.numel(),
                  "vocab_size": cfg["model"]["vocab_size"], "model_vocab": model_vocab},
        "timing": {"timer": "cuda_events" if cuda else "steady_clock",
                   "test_slowdown_pct": steps.slowdown_pct or None,
                   "wall_before_ms": 0.0, "steal_before_ms": steps.steal_before,
                   "data_time": "host wall time of the batch's copy to the device (the batch is made before the "
                                "timer starts), not synchronised; steps.data_ms per step"},
        "memory": {"peak_rss_reset": steps.rss_reset, "cpu_allocator": cpu_allocator,
                   "monitor": "torch.cuda.reset_peak_memory_stats before every step, max_memory_* after it "
                              "(CUDA); VmHWM reset before and read after every step (CPU)"},
        "op_breakdown": op_breakdown,
        "records": records,
    })
    return report


def profile_breakdown(torch, peer, cuda, one_step, batches, i):
    """One warm-up and BREAKDOWN_STEPS profiled steps under torch.profiler (CPU operators, and CUDA
    kernels on a GPU), each step a ProfilerStep#N range ending in a synchronisation (one_step's).
    The Kineto trace goes beside the report; `ladder run` categorises it as it does a rung's steps
    (bench/run/peers.h peer_op_breakdown). Returns the partial report's op_breakdown: {"trace",
    "step_dt_ms"}, or {"unavailable": why} when the profiler fails (the measured steps stand)."""
    from torch.profiler import ProfilerActivity, profile, schedule

    trace = os.path.join(os.path.dirname(os.path.abspath(peer.args.out)), BREAKDOWN_TRACE)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    # One cycle (repeat=1), so keeping events across cycles changes nothing; a torch.profiler that
    # takes acc_events warns ("Profiler clears events at the end of each cycle") unless told to keep them.
    keep = {"acc_events": True} if "acc_events" in inspect.signature(profile.__init__).parameters else {}
    dts = []
    try:
        with profile(activities=activities, schedule=schedule(wait=0, warmup=1, active=BREAKDOWN_STEPS, repeat=1),
                     on_trace_ready=lambda p: p.export_chrome_trace(trace), **keep) as prof:
            for k, batch in enumerate(batches):
                rec = one_step(i + k, batch, profiled=True)
                if k >= 1:
                    dts.append(rec["dt_ms"])
                prof.step()
    except Exception as e:  # noqa: BLE001 - no profiler here, or the profiled steps failed: say so, keep the figures
        return {"unavailable": f"the profiled steps failed: {type(e).__name__}: {e}"}
    if not os.path.exists(trace):
        return {"unavailable": f"torch.profiler wrote no trace ({trace})"}
    return {"trace": trace, "step_dt_ms": dts}


def shard_data(cfg, base):
    """The data section for token shards, in variants/data/token_shards.cpp's form."""
    import glob
    import hashlib

    d = cfg["data"]
    paths = sorted(glob.glob(d["path"]), key=os.fsencode)
    shards, tokens_total, rows_total, T = [], 0, 0, cfg["seq"]
    for p in paths:
        size = os.path.getsize(p)
        header = 1024 if d["format"] == "auto" else 0
        n = (size - header) // 2
        with open(p, "rb") as f:
            head = f.read(65536)
            f.seek(max(0, size - 65536))
            tail = f.read(65536)
        h = hashlib.sha1(head + tail + str(size).encode()).hexdigest()
        rows = max(1, (n - 1) // T)
        shards.append({"path": p, "format": "llmc" if header else "raw-u16", "size_bytes": size,
                       "header_bytes": header, "tokens": n, "rows": rows, "content_hash": f"sha1:{h}"})
        tokens_total += n
        rows_total += rows
    base = {k: v for k, v in base.items() if k != "generator"}
    base.update(kind="token_shards", pattern=d["path"], format=d["format"], shards=shards,
                content_hash_covers="sha1 of the first 64 KiB, the last 64 KiB and the size in decimal (peer.py)",
                tokens_total=tokens_total, rows_total=rows_total, row_tokens=T + 1,
                order="scripts/reference.py ShardReader: the rows of each shard permuted by a seeded bijection",
                rank_slice="one rank")
    return base


def read_declaration(args, device):
    """Sets args.declared (the peer's declaration) and args.machine from `ladder peers`; returns
    what is wrong, or None."""
    try:
        listed = ladder_peers(args.ladder, device)
    except (OSError, RuntimeError, ValueError) as e:
        return f"--ladder: {e}"
    declared = {p["name"]: p for p in listed["peers"]}
    if args.peer not in declared:
        return f"--peer: got '{args.peer}', expected one of: {', '.join(declared)} (ladder peers)"
    if args.peer not in MEASURING:
        return (f"--peer: '{args.peer}' is declared in bench/run/peers.cpp but has no measuring function here "
                f"(@peer(\"{args.peer}\") in scripts/peer.py)")
    args.declared, args.machine = declared[args.peer], listed["environment"]
    return None


def progress_stream(args):
    """Where the progress lines go: nowhere (--quiet), the descriptor --progress-fd names (line-buffered), or
    stderr. Raises OSError when that descriptor is not open."""
    if args.quiet:
        return None
    if args.progress_fd is None:
        return sys.stderr
    return os.fdopen(args.progress_fd, "w", buffering=1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--peer", required=True, help="a peer's name (ladder peers)")
    ap.add_argument("--ladder", required=True, help="the ladder executable: its peers and its description of "
                                                    "the machine (ladder peers --json --environment)")
    ap.add_argument("--config", required=True, help="the cell's config.json (a RunConfig, as ladder writes it)")
    ap.add_argument("--out", required=True, help="the partial report to write")
    ap.add_argument("--run-id", default="peer", help="run id recorded in the report")
    ap.add_argument("--label", default=None, help="progress-line label")
    ap.add_argument("--suite-version", default="unknown", help="ladder's version, for the report")
    ap.add_argument("--git-commit", default="unknown", help="ladder's git commit, for the report")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    ap.add_argument("--progress-fd", type=int, default=None,
                    help="write the progress lines to this open file descriptor instead of stderr (ladder run: its "
                         "own stderr, while this process's stdout and stderr go to the cell's output.log)")
    ap.add_argument("--bf16-off-because", default=None,
                    help="on a CPU: leave bf16 autocast off (the rung would: ladder run --cpu-bf16), for this reason")
    args = ap.parse_args(argv)
    args.label = args.label or f"peer-{args.peer}"
    try:
        args.progress = progress_stream(args)
    except OSError as e:
        print(f"peer.py: error: --progress-fd: got {args.progress_fd}, not an open descriptor: {e.strerror}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        with open(args.config) as f:
            cfg = json.load(f)
        for k in ("rung", "device", "model", "switches", "train", "batch", "seq", "steps", "warmup", "seed",
                  "threads", "fixed_batch"):
            if k not in cfg:
                raise KeyError(k)
    except OSError as e:
        print(f"peer.py: error: --config: cannot read {args.config}: {e.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (json.JSONDecodeError, KeyError) as e:
        print(f"peer.py: error: --config: {args.config}: not a ladder cell config ({e})", file=sys.stderr)
        return EXIT_BAD_INPUT
    why = read_declaration(args, cfg["device"])
    if why:
        print(f"peer.py: error: {why}", file=sys.stderr)
        return EXIT_BAD_INPUT
    peer = Peer(args, cfg)
    try:
        import torch
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import reference as ref  # the model, data, LR schedule: one copy, in reference.py
    except ImportError as e:
        peer.write_failure("skipped", "no usable torch", f"{sys.executable}: import failed: {e}", "setup")
        print(f"peer.py: skipped: {sys.executable} cannot import torch: {e}", file=sys.stderr)
        return EXIT_SKIPPED
    peer.torch_version = torch.__version__
    if cfg["device"].startswith("cuda") and not torch.cuda.is_available():
        peer.write_failure("skipped", "no CUDA in this torch", f"torch {torch.__version__} sees no CUDA device", "setup")
        return EXIT_SKIPPED
    return measure(peer, torch, ref)


if __name__ == "__main__":
    sys.exit(main())
