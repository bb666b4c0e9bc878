#!/usr/bin/env python3
"""Plain PyTorch-eager reference of ladder's GPT-2 training step.

The same model (variants/model/model.cpp), synthetic tokens (variants/data/data.cpp) or
token shards read with the same row order (variants/data/token_shards.h),
AdamW groups and LR schedule (variants/optim/optim.cpp) and step order
(variants/step/step.cpp) as the C++ code, written the way nanoGPT would.

  parity  Rebuild the run of a C++ report.json from its --save-init weights,
          run its first steps and compare loss and grad norm step by step (the
          norm against the fp64 norm of PyTorch's gradients, allowed PyTorch's
          own fp32 error there plus --rtol);
          with --grads (the run's --save-grads), also every parameter's
          gradient of step 0, naming the worst. Exit 0 when all agree within
          --rtol, 1 when not, 2 on bad input.
  bench   Time the same step in Python eager on the CPU (GPT-2 init, seeded)
          and print the median step time and tokens/s; --json saves them.

Example (--save-init and --save-grads are options of `ladder measure`):
  build/ladder measure --device cpu --preset tiny --rung fp32+fused --steps 5 --warmup 0 \
      --save-init /tmp/x/init.pt --save-grads /tmp/x/grads.pt --out /tmp/x
  scripts/reference.py parity --report /tmp/x/fp32+fused/report.json --init /tmp/x/init.pt \
      --grads /tmp/x/grads.pt --rtol 1e-5

The reference covers the rungs' maths: padded vocabularies (the padding rows
are never in the softmax) and gradient accumulation (config.micro_steps), on
one rank.
  scripts/reference.py bench --preset gpt2-124m --batch 4 --seq 64 --steps 10
"""
import argparse
import bisect
import glob
import json
import math
import os
import pickle
import statistics
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.jit._pickle  # restore_type_tag, which LibTorch's pickle_save of a dict references

# name: (n_layer, n_head, n_embd, block_size, vocab_size, batch, seq), as variants/config/config.cpp.
PRESETS = {
    "gpt2-124m": (12, 12, 768, 1024, 50257, 16, 1024),
    "gpt2-350m": (24, 16, 1024, 1024, 50257, 8, 1024),
    "gpt2-774m": (36, 20, 1280, 1024, 50257, 4, 1024),
    "gpt2-1558m": (48, 25, 1600, 1024, 50257, 2, 1024),
    "cpu-default": (4, 4, 256, 256, 50257, 4, 256),
    "tiny": (2, 2, 64, 64, 1024, 4, 64),
}
# TrainConfig defaults (variants/config/config.h), in the report's JSON form.
DEFAULT_TRAIN = {"max_lr": 6e-4, "min_lr_ratio": 0.1, "lr_warmup_steps": 10, "lr_decay_steps": 0,
                 "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1, "grad_clip": 1.0}


class InputError(Exception):
    """Bad user input (file, JSON, field): exit code 2."""


# ---------------------------------------------------------------- model


class CausalSelfAttention(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.n_head, self.n_embd = m["n_head"], m["n_embd"]
        self.c_attn = nn.Linear(self.n_embd, 3 * self.n_embd)
        self.c_proj = nn.Linear(self.n_embd, self.n_embd)  # residual projection
        mask = torch.ones(m["block_size"], m["block_size"], dtype=torch.bool).tril()
        self.register_buffer("causal_mask", mask, persistent=False)  # true where allowed

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, nh, T, hs)
        att = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
        att = att.masked_fill(~self.causal_mask[:T, :T], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v)  # (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # (B, T, C)
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.c_fc = nn.Linear(m["n_embd"], 4 * m["n_embd"])
        self.c_proj = nn.Linear(4 * m["n_embd"], m["n_embd"])  # residual projection

    def forward(self, x):
        h = F.gelu(self.c_fc(x), approximate="tanh")  # (B, T, 4C)
        return self.c_proj(h)  # (B, T, C)


class Block(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.ln_1 = nn.LayerNorm(m["n_embd"])
        self.attn = CausalSelfAttention(m)
        self.ln_2 = nn.LayerNorm(m["n_embd"])
        self.mlp = MLP(m)

    def forward(self, x):
        y = x + self.attn(self.ln_1(x))  # (B, T, C)
        return y + self.mlp(self.ln_2(y))  # (B, T, C)


class GPT(nn.Module):
    """Parameters in the C++ order and names; lm_head is tied to wte."""

    def __init__(self, m):
        super().__init__()
        self.vocab_size = m["vocab_size"]  # V; wte may have padding rows beyond it
        self.wte = nn.Embedding(m.get("model_vocab", m["vocab_size"]), m["n_embd"])  # (Vp, C)
        self.wpe = nn.Embedding(m["block_size"], m["n_embd"])  # (block, C)
        self.h = nn.ModuleList(Block(m) for _ in range(m["n_layer"]))
        self.ln_f = nn.LayerNorm(m["n_embd"])

    def forward(self, idx):  # (B, T) int64
        pos = torch.arange(idx.size(1), device=idx.device)  # (T)
        x = self.wte(idx) + self.wpe(pos)  # (B, T, C)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)  # (B, T, C)
        logits = torch.matmul(x, self.wte.weight.t())  # (B, T, Vp)
        return logits[..., :self.vocab_size]  # (B, T, V): padding never enters the softmax


@torch.no_grad()
def init_gpt2_weights(model, n_layer, seed):
    """GPT-2 init: N(0, 0.02), residual c_proj weights 0.02/sqrt(2L), zero biases, LN (1, 0).

    Same draws in the same parameter order as variants/model/model.cpp, so it gives the C++ weights.
    """
    torch.manual_seed(seed)
    for name, p in model.named_parameters():
        if name.endswith(".bias"):
            p.zero_()
        elif "ln_" in name:
            p.fill_(1.0)
        else:
            residual = name.endswith(".c_proj.weight")
            p.normal_(0.0, 0.02 / math.sqrt(2 * n_layer) if residual else 0.02)


def load_tensor_dict(path, what):
    """A {name: tensor} dict written by ladder (LibTorch's pickle_save); InputError naming the file if not."""
    try:
        with torch.serialization.safe_globals([torch.jit._pickle.restore_type_tag]):
            saved = torch.load(path, map_location="cpu", weights_only=True)
    except (OSError, RuntimeError, ValueError, pickle.UnpicklingError) as e:
        raise InputError(f"{path}: cannot load the {what}: {e}") from e
    if not isinstance(saved, dict):
        raise InputError(f"{path}: expected a dict name -> tensor, got {type(saved).__name__}")
    return saved


def load_init_weights(model, path):
    """Copy a `ladder measure --save-init` dict into `model`; names and shapes must match exactly."""
    saved = load_tensor_dict(path, "initial weights")
    params = dict(model.named_parameters())
    problems = [f"missing {n}" for n in params if n not in saved]
    problems += [f"unexpected {n}" for n in saved if n not in params]
    problems += [f"{n}: shape {tuple(saved[n].shape)}, model expects {tuple(p.shape)}"
                 for n, p in params.items() if n in saved and saved[n].shape != p.shape]
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise InputError(f"{path}: weights do not match the report's model: "
                         + "; ".join(problems[:5]) + more)
    with torch.no_grad():
        for n, p in params.items():
            p.copy_(saved[n])


# ---------------------------------------------------------------- data


def splitmix64(x):
    """splitmix64 of a uint64 array, wrapping mod 2^64 like C++ uint64_t."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def synthetic_batch(cfg, step, micro=0):
    """Batch of micro-step `micro` of optimizer step `step` (one rank): x (B, T), y (B, T) int64."""
    B, T, V = cfg["batch"], cfg["seq"], cfg["model"]["vocab_size"]
    if cfg["fixed_batch"]:
        step = micro = 0
    first = (step * cfg["micro_steps"] + micro) * B  # variants/data/data.cpp, world 1
    base = np.uint64((cfg["seed"] * 0xD1B54A32D192ED03) & (2**64 - 1))
    rows = np.arange(first, first + B, dtype=np.uint64)[:, None]  # (B, 1)
    cols = np.arange(T + 1, dtype=np.uint64)[None, :]  # (1, T+1)
    with np.errstate(over="ignore"):
        counters = base + rows * np.uint64(T + 1) + cols  # (B, T+1)
    tokens = torch.from_numpy((splitmix64(counters) % np.uint64(V)).astype(np.int64))  # (B, T+1)
    return tokens[:, :T].contiguous(), tokens[:, 1:].contiguous()


class ShardReader:
    """variants/data/token_shards.h in numpy: the shards of cfg["data"], memory-mapped,
    and the same (seed, step, micro, rank) -> row formula (one rank, no accumulation)."""

    LLMC_MAGIC, LLMC_HEADER_BYTES = 20240520, 1024

    def __init__(self, cfg):
        data = cfg["data"]
        self.B, self.T, self.seed = cfg["batch"], cfg["seq"], cfg["seed"]
        self.micro_steps = cfg["micro_steps"]
        self.fixed = cfg["fixed_batch"]
        paths = sorted(glob.glob(data["path"]), key=os.fsencode)  # byte order, as the C++ reader
        if not paths:
            raise InputError(f"data: '{data['path']}' matched no files")
        self.tokens, self.starts, self.rows = [], [], []
        total = 0
        for path in paths:
            header = 0
            if data["format"] == "auto":
                magic, version, count = np.fromfile(path, dtype="<i4", count=3)
                if magic != self.LLMC_MAGIC or version != 1:
                    raise InputError(f"{path}: not an llm.c version-1 shard")
                header = self.LLMC_HEADER_BYTES
            t = np.memmap(path, dtype="<u2", mode="r", offset=header)  # (n,)
            self.tokens.append(t)
            self.starts.append(total)
            self.rows.append((len(t) - 1) // self.T)
            total += self.rows[-1]
        self.total = total

    def locate(self, n):
        """Logical row n -> (shard, row in that shard)."""
        epoch, i = divmod(n, self.total)
        s = bisect.bisect_right(self.starts, i) - 1
        rows, j = self.rows[s], i - self.starts[s]
        mask = 2**64 - 1
        base = (self.seed * 0xD1B54A32D192ED03 + epoch * 0x9E3779B97F4A7C15 + 2 * s) & mask
        mix = splitmix64(np.array([base, (base + 1) & mask], dtype=np.uint64))
        a, c = int(mix[0]) % rows, int(mix[1]) % rows
        while math.gcd(a, rows) != 1:
            a = (a + 1) % rows
        return s, (a * j + c) % rows

    def batch(self, step, micro=0):
        """x (B, T), y (B, T) int64 of micro-step `micro` of optimizer step `step`."""
        if self.fixed:
            step = micro = 0
        windows = []
        first = (step * self.micro_steps + micro) * self.B
        for b in range(self.B):
            s, k = self.locate(first + b)
            windows.append(np.asarray(self.tokens[s][k * self.T:k * self.T + self.T + 1], dtype=np.int64))
        tokens = torch.from_numpy(np.stack(windows))  # (B, T+1)
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()


def make_batches(cfg):
    """step -> (x, y): the synthetic stream, or the shards the run read."""
    data = cfg.get("data") or {}
    if data.get("path"):
        return ShardReader(cfg).batch
    return lambda step, micro=0: synthetic_batch(cfg, step, micro)


# ---------------------------------------------------------------- optimizer and step


def learning_rate(t, step, decay_steps):
    """build-nanogpt's get_lr: linear warmup, cosine to max_lr * min_lr_ratio, flat after."""
    max_lr, warmup = t["max_lr"], t["lr_warmup_steps"]
    min_lr = max_lr * t["min_lr_ratio"]
    if step < warmup:
        return max_lr * (step + 1) / warmup
    if step > decay_steps:
        return min_lr
    span = decay_steps - warmup
    if span <= 0:
        return max_lr
    coeff = 0.5 * (1.0 + math.cos(math.pi * (step - warmup) / span))  # 1 -> 0
    return min_lr + coeff * (max_lr - min_lr)


class TrainStep:
    """variants/step/step.cpp: batch, forward, loss, backward, clip, LR, AdamW, zero grads."""

    def __init__(self, model, cfg):
        self.model, self.cfg, self.t = model, cfg, cfg["train"]
        self.batch = make_batches(cfg)
        self.params = list(model.parameters())
        decay = [p for p in self.params if p.dim() >= 2]
        no_decay = [p for p in self.params if p.dim() < 2]
        # foreach=False: the per-parameter loop, as LibTorch's AdamW.
        self.optimizer = torch.optim.AdamW(
            [{"params": decay, "weight_decay": self.t["weight_decay"]},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=self.t["max_lr"], betas=tuple(self.t["betas"]), eps=self.t["eps"], foreach=False)
        decay_steps = self.t["lr_decay_steps"]
        self.decay_steps = decay_steps if decay_steps > 0 else cfg["warmup"] + cfg["steps"]

    def run(self, step, keep_grads=None):
        """Returns (loss, pre-clip grad norm, lr, that norm in fp64) of optimizer step `step`
        (0-based); with keep_grads (a dict), fills it with name -> gradient before the clip."""
        m = self.cfg["micro_steps"]
        loss_sum = 0.0
        for micro in range(m):
            x, y = self.batch(step, micro)  # (B, T), (B, T)
            logits = self.model(x)  # (B, T, V)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1)) / m  # ()
            loss.backward()  # accumulates over micro-steps
            loss_sum += loss.item()
        if keep_grads is not None:
            keep_grads.update({n: p.grad.detach().clone() for n, p in self.model.named_parameters()})
        exact = math.sqrt(sum(p.grad.double().pow(2).sum().item() for p in self.params if p.grad is not None))
        grad_norm = nn.utils.clip_grad_norm_(self.params, self.t["grad_clip"], foreach=True)  # ()
        lr = learning_rate(self.t, step, self.decay_steps)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss_sum, grad_norm.item(), lr, exact


# ---------------------------------------------------------------- commands


def field(obj, path, file):
    """obj[a][b]... for path "a.b..."; InputError naming the file and field when absent."""
    for key in path.split("."):
        if not isinstance(obj, dict) or key not in obj:
            raise InputError(f"{file}: missing field '{path}'")
        obj = obj[key]
    return obj


def read_report(path):
    """(run config, recorded steps: step/loss/grad_norm/lr lists, warmup steps first)."""
    try:
        with open(path) as f:
            report = json.load(f)
    except OSError as e:
        raise InputError(f"{path}: cannot read the report: {e.strerror}") from e
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON: {e}") from e
    cfg = {k: field(report, "config." + k, path)
           for k in ("preset", "batch", "seq", "steps", "warmup", "seed", "threads", "fixed_batch")}
    cfg["model"] = {k: field(report, "config.model." + k, path)
                    for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size")}
    cfg["train"] = {k: field(report, "config.train." + k, path) for k in DEFAULT_TRAIN}
    cfg["device"] = report["config"].get("device", "cpu")
    cfg["micro_steps"] = report["config"].get("micro_steps", 1)
    cfg["model"]["model_vocab"] = report["config"].get("model_vocab", cfg["model"]["vocab_size"])
    if report["config"].get("world_size", 1) != 1:
        raise InputError(f"{path}: field 'config.world_size' is {report['config']['world_size']}; "
                         "expected 1 (the reference runs one rank)")
    cfg["data"] = report["config"].get("data")
    recorded = {k: field(report, f"warmup_steps.{k}", path) + field(report, f"steps.{k}", path)
                for k in ("step", "loss", "grad_norm", "lr")}
    return cfg, recorded


def rel_diff(a, b):
    """|a - b| relative to the reference value b."""
    return abs(a - b) / max(abs(b), 1e-30)


def gradient_diffs(cpp, ref, path):
    """[(rel diff, name)] per parameter, worst first: ||g_C++ - g_Py|| / ||g_Py||."""
    missing = sorted(set(ref) ^ set(cpp))
    if missing:
        raise InputError(f"{path}: gradients do not match the model's parameters: {', '.join(missing[:5])}")
    out = []
    for name, g in ref.items():
        if cpp[name].shape != g.shape:
            raise InputError(f"{path}: {name} has shape {tuple(cpp[name].shape)}, expected {tuple(g.shape)}")
        num = (cpp[name].double() - g.double()).norm().item()
        den = g.double().norm().item()
        out.append((num / den if den > 0 else (0.0 if num == 0 else math.inf), name))
    return sorted(out, reverse=True)


def cmd_parity(args):
    cfg, rec = read_report(args.report)
    n = args.steps
    if n <= 0:
        raise InputError(f"--steps: got {n}, expected an integer > 0")
    if rec["step"][:n] != list(range(n)):
        raise InputError(f"{args.report}: need steps 0..{n - 1} in 'warmup_steps'/'steps', "
                         f"found {rec['step']}")
    torch.set_num_threads(cfg["threads"])
    m = cfg["model"]
    model = GPT(m)
    load_init_weights(model, args.init)
    step = TrainStep(model, cfg)
    print(f"parity: preset {cfg['preset']} (L{m['n_layer']} H{m['n_head']} C{m['n_embd']} "
          f"V{m['vocab_size']}), B{cfg['batch']} T{cfg['seq']}, C++ on {cfg['device']}, "
          f"{cfg['threads']} threads, rtol {args.rtol:g}")
    # The norm: PyTorch's own fp32 norm drifts from the exact one with a tensor's length (4e-5 at
    # 2.4M values, 2.7e-3 at 38.6M on a Xeon's CPU), and ladder's CPU norm by rows is nearer the
    # exact one than that. So the C++ norm is held to the exact (fp64) norm of PyTorch's own
    # gradients: no further from it than PyTorch's fp32 norm is, plus rtol.
    print(f"{'step':>4} {'C++ loss':>12} {'Py loss':>12} {'rel':>9}  "
          f"{'C++ norm':>12} {'Py norm':>12} {'fp64 norm':>12} {'C++ rel':>9} {'Py rel':>9}")
    cpp_grads = load_tensor_dict(args.grads, "gradients") if args.grads else None
    ok = True
    for i in range(n):
        ref_grads = {} if (cpp_grads is not None and i == 0) else None
        loss, norm, lr, exact = step.run(i, ref_grads)
        dl = rel_diff(loss, rec["loss"][i])
        dn, dpy = rel_diff(rec["grad_norm"][i], exact), rel_diff(norm, exact)
        bad = dl > args.rtol or dn > dpy + args.rtol
        print(f"{i:>4} {rec['loss'][i]:>12.7f} {loss:>12.7f} {dl:>9.2e}  "
              f"{rec['grad_norm'][i]:>12.7f} {norm:>12.7f} {exact:>12.7f} {dn:>9.2e} {dpy:>9.2e}"
              f"{'  FAIL' if bad else ''}")
        if rel_diff(lr, rec["lr"][i]) > 1e-12:
            print(f"     lr differs: C++ {rec['lr'][i]!r}, Python {lr!r}  FAIL")
            bad = True
        ok = ok and not bad
        if ref_grads is not None:
            diffs = gradient_diffs(cpp_grads, ref_grads, args.grads)
            worst = ", ".join(f"{name} {d:.2e}" for d, name in diffs[:3])
            bad_grads = not diffs[0][0] <= args.rtol
            print(f"     step 0 gradients, per parameter (||C++ - Py|| / ||Py||), worst: {worst}"
                  f"{'  FAIL' if bad_grads else ''}")
            ok = ok and not bad_grads
    print("parity: PASS" if ok else f"parity: FAIL (rel diff above {args.rtol:g})")
    return 0 if ok else 1


def bench_config(args):
    """The run config from --preset or --from-report, with the command-line overrides."""
    if args.from_report:
        cfg, _ = read_report(args.from_report)
    else:
        L, H, C, block, V, B, T = PRESETS[args.preset]
        cfg = {"preset": args.preset, "batch": B, "seq": T, "steps": 10, "warmup": 2, "seed": 1337,
               "threads": os.cpu_count(), "fixed_batch": False, "train": dict(DEFAULT_TRAIN), "micro_steps": 1,
               "model": {"n_layer": L, "n_head": H, "n_embd": C, "block_size": block, "vocab_size": V}}
    for k in ("batch", "seq", "steps", "warmup", "threads", "seed"):
        if getattr(args, k) is not None:
            cfg[k] = getattr(args, k)
    cfg["device"] = "cpu"
    for k in ("batch", "seq", "steps", "threads"):
        if cfg[k] <= 0:
            raise InputError(f"--{k}: got {cfg[k]}, expected an integer > 0")
    if cfg["warmup"] < 0:
        raise InputError(f"--warmup: got {cfg['warmup']}, expected an integer >= 0")
    if cfg["seq"] > cfg["model"]["block_size"]:
        raise InputError(f"--seq: {cfg['seq']} exceeds the block size {cfg['model']['block_size']}")
    if args.json and not os.access(os.path.dirname(os.path.abspath(args.json)), os.W_OK):
        raise InputError(f"--json: cannot write {args.json}: its directory is missing or read-only")
    return cfg


def cmd_bench(args):
    cfg = bench_config(args)
    torch.set_num_threads(cfg["threads"])
    m = cfg["model"]
    model = GPT(m)
    init_gpt2_weights(model, m["n_layer"], cfg["seed"])
    step = TrainStep(model, cfg)
    tokens = cfg["batch"] * cfg["seq"]
    dts, losses = [], []
    for i in range(cfg["warmup"] + cfg["steps"]):
        t0 = time.perf_counter()
        loss, _, _, _ = step.run(i)  # CPU ops are synchronous: the step is done when run returns
        dt = time.perf_counter() - t0
        if i >= cfg["warmup"]:
            dts.append(dt * 1e3)
            losses.append(loss)
    tps = [tokens / (dt * 1e-3) for dt in dts]
    result = {"dt_ms": dts, "tokens_per_s": tps, "median_dt_ms": statistics.median(dts),
              "median_tokens_per_s": statistics.median(tps), "loss": losses, "config": cfg,
              "torch_version": torch.__version__, "threads": torch.get_num_threads()}
    print(f"bench: python eager, preset {cfg['preset']}, B{cfg['batch']} T{cfg['seq']}, "
          f"{cfg['warmup']} warmup + {cfg['steps']} steps, {result['threads']} threads, "
          f"torch {torch.__version__}")
    print(f"median dt_ms {result['median_dt_ms']:.2f} | median tokens/s "
          f"{result['median_tokens_per_s']:.0f} | loss {losses[0]:.4f} -> {losses[-1]:.4f}")
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump(result, f, indent=2)
        except OSError as e:
            raise InputError(f"{args.json}: cannot write: {e.strerror}") from e
        print(f"wrote {args.json}")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parity", help="compare loss and grad norm with a C++ report")
    p.add_argument("--report", required=True, help="the C++ run's fp32/report.json")
    p.add_argument("--init", required=True, help="its initial weights (ladder run --save-init)")
    p.add_argument("--steps", type=int, default=5, help="steps to compare from step 0 (default 5)")
    p.add_argument("--rtol", type=float, default=1e-4, help="relative tolerance (default 1e-4)")
    p.add_argument("--grads", help="step 0's gradients (ladder measure --save-grads): compare every parameter")
    b = sub.add_parser("bench", help="time the step in Python eager on the CPU")
    src = b.add_mutually_exclusive_group(required=True)
    src.add_argument("--preset", choices=list(PRESETS), help="model preset (variants/config/config.cpp)")
    src.add_argument("--from-report", metavar="REPORT.json",
                     help="the whole config of a C++ report (its steps, warmup, threads too)")
    for k, h in (("batch", "micro-batch B"), ("seq", "sequence length T"),
                 ("steps", "measured steps (default 10)"), ("warmup", "untimed steps first (default 2)"),
                 ("threads", "intra-op threads (default: all cores)"), ("seed", "seed (default 1337)")):
        b.add_argument(f"--{k}", type=int, help=h)
    b.add_argument("--json", metavar="OUT.json", help="write per-step times and medians here")
    args = ap.parse_args(argv)
    try:
        return cmd_parity(args) if args.command == "parity" else cmd_bench(args)
    except InputError as e:
        print(f"reference.py: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
