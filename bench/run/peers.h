// bench/run/peers.h: the PyTorch peers of a run (`ladder run --peers eager,compile`).
//
// A peer is what a user would otherwise run: the same GPT-2 in PyTorch, eager
// or under torch.compile, with the switches of the top single-process rung
// (peer_base_rung(), variants/config/rungs.h: TF32, bf16 autocast, SDPA causal attention, vocabulary
// padded to a multiple of 128, fused AdamW; `fused` is torch.compile for the
// compile peer and off for eager). Each peer is an extra cell of the matrix,
// "peer-<name>" (reports/model/run/peer_cells.h), run after the rungs in its own
// child process: scripts/peer.py, which reuses scripts/reference.py's model,
// data and schedule and times each step as the harness does. It writes a
// partial report: what it is (environment, switches, model, data) and one
// record per step; complete_peer_report() makes the report with the
// builder rungs use: the warm-up rule, summary statistics, timing, memory,
// FLOPs and MFU against the run's roofline.json, the op breakdown of its
// profiled steps (peer_op_breakdown), and the parity note (peers take no
// part in loss parity; their losses are in their reports).
//
// Default: no peers on CPU (torch.compile's first step compiles for about
// 45 s even at the tiny preset on 2 cores, cold cache), eager and compile on CUDA.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/run/cell.h"
#include "profiler/trace/breakdown_section.h"
#include "reports/model/report/identity_section.h"
#include "reports/model/run/peer_cells.h"

namespace ladder {

inline constexpr const char* kPeerParityNote =
    "not checked: peers take no part in loss parity (their model init and reduction order differ from "
    "ladder's); their losses are recorded in their reports (steps.loss, warmup_steps.loss)";

// A peer is one declaration here and one measuring function in
// scripts/peer.py (registered under its name with @peer), which reads this
// list from `ladder peers --json`.
struct PeerInfo {
  const char* name;  // "eager", "compile"
  const char* what;
  bool fuses;        // its own fusion stands in for ladder's fused rung: its config's `fused` is on
  bool by_default;   // among the CUDA default (--peers unset)
};
const std::vector<PeerInfo>& peer_table();
const PeerInfo& peer_info(const std::string& name);
// The report's peer section as ladder knows it before the peer's process
// says more: its name, program and what it runs, no torch version (a peer
// that could not start, or left no report).
PeerSection peer_section(const std::string& name);
// "eager, compile": the declared peers' names (`defaults_only`: the CUDA default's).
std::string peer_names(bool defaults_only);  // throws std::logic_error for an undeclared name

// `ladder peers [--json] [--environment DEVICE]`: the declared peers, and
// with --environment this machine's environment as ladder's reports record it
// (bench/measure/device/environment.h), read in a process of its own: what scripts/peer.py
// records of the machine, instead of measuring it again in Python.
int peers_command(const std::vector<std::string>& args);

// "--peers" values: "none", or a comma-separated list of peer names.
// Throws ConfigError naming the option, the value and the valid names.
std::vector<std::string> parse_peers(const std::string& value, const char* option = "--peers");
// The default for a device: none on CPU, the peers declared by_default on CUDA.
std::vector<std::string> default_peers(const std::string& device);

// The peer cell of one shape: `base` (the shape's config) with peer_base_rung()'s
// switches, `fused` only for a peer that fuses.
Cell make_peer_cell(const RunConfig& base, const std::string& id_prefix, const std::string& peer);

// How to start a peer's process: the Python (LADDER_PYTHON, else the
// source tree's .venv/bin/python, else python3 on PATH) and scripts/peer.py.
// `skip_reason` is set, and `args` empty, when either cannot be found.
// Unless `quiet`, peer.py writes its progress lines to kPeerProgressFd,
// which the runner opens on its own stderr; everything else the process
// prints (PyTorch's warnings, a traceback) goes to the cell's kPeerLogFile
// (bench/run/child_process.h ChildOutput).
struct PeerCommand {
  std::vector<std::string> args;
  std::string skip_reason;
};
PeerCommand peer_command(const Cell& cell, const std::string& config_path, const std::string& partial_path,
                         const std::string& label, const std::string& run_id, bool quiet);
inline constexpr const char* kPeerPythonEnv = "LADDER_PYTHON";
inline constexpr int kPeerProgressFd = 3;
inline constexpr const char* kPeerLogFile = "output.log";  // beside the peer's report.json

// The op breakdown of a peer, from what scripts/peer.py wrote in its partial
// report's op_breakdown: {"trace": the Kineto trace of its profiled steps,
// "step_dt_ms": their dt}, or {"unavailable": why}, or null. The trace is
// categorised as a rung's steps are (profiler/trace/trace_breakdown.h): device
// kernels on CUDA, host operators on CPU, with the busy-within-dt check. A
// trace that cannot be read gives an unavailable breakdown saying why (the
// peer's other figures stand). `op_counts`, when given, gets the report's
// op_counts from the same trace (left empty when there is none). Empty for a
// null `partial`.
std::optional<profiler::OpBreakdownSection> peer_op_breakdown(const nlohmann::json& partial, bool cuda,
                                                              std::optional<profiler::OpCounts>* op_counts = nullptr);

// The peer's partial report (status ok) made into a rung report by the one
// builder rungs use (bench/measure/report/rung_report.h): its step records, every step
// timed alike, are split by the harness's warm-up rule (warmup_done), and
// the summary, timing, memory, FLOPs and MFU come from there. Throws
// std::runtime_error naming the missing field when the partial report lacks
// what it needs.
nlohmann::json complete_peer_report(const nlohmann::json& partial, const RunConfig& cfg,
                                    const std::string& roofline_file);

}  // namespace ladder
