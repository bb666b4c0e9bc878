// bench/run/peers.cpp: peer cells, their command line and their completed
// report (see peers.h).
#include "bench/run/peers.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

#include "bench/measure/device/device.h"
#include "bench/measure/device/environment.h"
#include "bench/measure/report/rung_report.h"
#include "build_info.h"
#include "profiler/common/cli.h"
#include "profiler/trace/device_steps.h"
#include "profiler/trace/trace_breakdown.h"
#include "reports/model/report/report_loader.h"
#include "reports/stats/stats.h"
#include "variants/config/rungs.h"

namespace ladder {

namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<PeerInfo>& peer_table() {
  static const std::vector<PeerInfo> kPeers = {
      {"eager", "PyTorch eager: the same model and switches, op by op", false, true},
      {"compile", "torch.compile (inductor) of forward + loss, the same model and switches", true, true},
      {"compile-autotune",
       "torch.compile mode max-autotune-no-cudagraphs: inductor's GEMMs chosen by autotuning (Triton templates "
       "against cuBLAS), the same model and switches; compiles for minutes on a GPU",
       true, false},
  };
  return kPeers;
}

const PeerInfo& peer_info(const std::string& name) {
  for (const auto& p : peer_table())
    if (name == p.name) return p;
  throw std::logic_error("peer_info: no peer '" + name + "' is declared (bench/run/peers.cpp)");
}

PeerSection peer_section(const std::string& name) {
  PeerSection p;
  p.name = name;
  p.program = "scripts/peer.py";
  p.what = peer_info(name).what;
  return p;
}

std::string peer_names(bool defaults_only) {
  std::string names;
  for (const auto& p : peer_table())
    if (p.by_default || !defaults_only) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
  return names;
}

int peers_command(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string device;
  ArgParser ap("peers",
               "The PyTorch peers (ladder run --peers): each is one declaration in bench/run/peers.cpp and one\n"
               "measuring function in scripts/peer.py, which reads this list (--json) and, with --environment,\n"
               "the machine's environment as ladder's reports record it.");
  ap.add_flag("--json", "print JSON: {\"peers\": [...], \"environment\": ...}", [&] { as_json = true; });
  ap.add_value("--environment", "DEVICE", "also describe this machine and DEVICE (cpu, cuda, cuda:N)",
               [&](const std::string& v) { device = v; });
  if (!ap.parse(args)) return 0;
  json peers = json::array();
  for (const auto& p : peer_table())
    peers.push_back({{"name", p.name}, {"what", p.what}, {"fuses", p.fuses}, {"by_default", p.by_default}});
  json out = {{"peers", peers}};
  if (!device.empty()) out["environment"] = fields::to_json(describe_environment(parse_device(device)));
  if (as_json) {
    fmt::print("{}\n", out.dump(2));
    return 0;
  }
  size_t width = 0;
  for (const auto& p : peer_table()) width = std::max(width, std::string(p.name).size());
  for (const auto& p : peer_table())
    fmt::print("{:<{}}  {:<15}  {}\n", p.name, width, p.by_default ? "default on CUDA" : "on request", p.what);
  return 0;
}

std::vector<std::string> parse_peers(const std::string& value, const char* option) {
  const std::string valid = peer_names(false);
  if (value == "none") return {};
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t comma = value.find(',', start);
    const std::string name = value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    bool known = false;
    for (const auto& p : peer_table()) known = known || name == p.name;
    if (!known)
      throw ConfigError(fmt::format("{}: got '{}'{}; expected none or a comma-separated list of: {}", option, value,
                                    name == value ? "" : fmt::format(" ('{}' is not a peer)", name), valid));
    for (const auto& seen : out)
      if (seen == name) throw ConfigError(fmt::format("{}: got '{}': '{}' is named twice", option, value, name));
    out.push_back(name);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::vector<std::string> default_peers(const std::string& device) {
  if (device.rfind("cuda", 0) != 0) return {};
  std::vector<std::string> all;
  for (const auto& p : peer_table())
    if (p.by_default) all.push_back(p.name);
  return all;
}

Cell make_peer_cell(const RunConfig& base, const std::string& id_prefix, const std::string& peer) {
  Cell c;
  c.id = id_prefix + kPeerCellPrefix + peer;
  c.role = "peer";
  c.peer = peer;
  c.cfg = base;
  c.cfg.rung = kPeerCellPrefix + peer;
  c.cfg.sw = peer_base_rung().sw;
  c.cfg.sw.set(switches::fused, peer_info(peer).fuses);  // torch.compile is a peer's fusion; eager has none
  c.cfg.world_size = 1;
  c.cfg.profile.clear();  // Kineto traces are the rungs' (the peer runs no LibTorch harness)
  return c;
}

namespace {

bool executable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string p = path;
  size_t start = 0;
  while (start <= p.size()) {
    const size_t colon = p.find(':', start);
    const std::string dir = p.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
    if (!dir.empty() && executable(dir + "/" + name)) return dir + "/" + name;
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  return "";
}

}  // namespace

PeerCommand peer_command(const Cell& cell, const std::string& config_path, const std::string& partial_path,
                         const std::string& label, const std::string& run_id, bool quiet) {
  PeerCommand pc;
  std::string python;
  if (const char* env = std::getenv(kPeerPythonEnv); env && *env) {
    python = env;
    if (!executable(python)) {
      pc.skip_reason = fmt::format("{}='{}' is not an executable file", kPeerPythonEnv, python);
      return pc;
    }
  } else if (const std::string venv = std::string(build_info::kSourceDir) + "/.venv/bin/python"; executable(venv)) {
    python = venv;
  } else {
    python = find_on_path("python3");
  }
  if (python.empty()) {
    pc.skip_reason = fmt::format("no Python found ({}/.venv/bin/python, python3 on PATH); set {}",
                                 build_info::kSourceDir, kPeerPythonEnv);
    return pc;
  }
  const std::string script = std::string(build_info::kSourceDir) + "/scripts/peer.py";
  if (!fs::exists(script)) {
    pc.skip_reason = fmt::format("{} not found (the source tree this ladder was built from)", script);
    return pc;
  }
  pc.args = {python, script, "--peer", cell.peer, "--ladder", fs::read_symlink("/proc/self/exe").string(),
             "--config", config_path, "--out", partial_path,
             "--label", label, "--run-id", run_id, "--suite-version", build_info::kVersion,
             "--git-commit", build_info::kGitCommit};
  if (quiet) pc.args.push_back("--quiet");
  else pc.args.insert(pc.args.end(), {"--progress-fd", std::to_string(kPeerProgressFd)});
  return pc;
}

namespace {

const json& field(const json& j, const std::string& path) {
  const json* at = &j;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key))
      throw std::runtime_error(fmt::format("the peer's report has no field '{}'", path));
    at = &(*at)[key];
    if (dot == std::string::npos) return *at;
    start = dot + 1;
  }
}

}  // namespace

std::optional<profiler::OpBreakdownSection> peer_op_breakdown(const json& partial, bool cuda,
                                                              std::optional<profiler::OpCounts>* op_counts) {
  if (!partial.is_object()) return std::nullopt;
  const std::string source = cuda ? "kineto trace of scripts/peer.py: CUDA kernels"
                                  : "kineto trace of scripts/peer.py: CPU operators";
  if (partial.contains("unavailable") && partial["unavailable"].is_string())
    return profiler::OpBreakdownSection::unavailable_from(source, partial["unavailable"].get<std::string>());
  try {
    const json& trace_path = field(partial, "trace");
    const json& dts = field(partial, "step_dt_ms");
    if (!trace_path.is_string()) throw std::runtime_error("the peer's op_breakdown.trace is not a path");
    if (!dts.is_array() || dts.empty() || !std::all_of(dts.begin(), dts.end(), [](const json& x) { return x.is_number(); }))
      throw std::runtime_error("the peer's op_breakdown.step_dt_ms is not a non-empty list of numbers");
    const std::string path = trace_path.get<std::string>();
    const profiler::TraceBreakdown t = profiler::trace_breakdown(read_json_file(path), cuda);
    if (t.steps != int64_t(dts.size()))
      throw std::runtime_error(fmt::format("{} has {} ProfilerStep ranges but the peer timed {} steps", path, t.steps,
                                           dts.size()));
    double dt = 0;
    for (const auto& x : dts) dt += x.get<double>();
    dt /= double(dts.size());
    const double per = double(t.steps);
    profiler::OpBreakdownSection b = profiler::breakdown_section(source, t.total, t.steps, dt);
    b.trace = path;
    if (cuda) {
      b.kernel_launches_per_step = double(t.total.kernels) / per;
      b.memcpy_memset_per_step = double(t.total.memcpy_memset) / per;
      b.graph_launches_per_step = double(t.graph_launches) / per;
    } else {
      b.ops_per_step = double(t.cpu_ops) / per;
    }
    auto rounded = [&](double total) { return int64_t(total / per + 0.5); };
    if (op_counts)
      *op_counts = profiler::OpCounts{rounded(double(t.cpu_ops)), rounded(double(t.total.kernels)),
                                      rounded(double(t.total.memcpy_memset)), "kineto trace of scripts/peer.py"};
    profiler::add_invariant(b, profiler::check_busy_within_dt(t.total.busy_ms / per, dt));
    return b;
  } catch (const std::exception& e) {  // a missing or unreadable trace: the peer's other figures stand
    return profiler::OpBreakdownSection::unavailable_from(source, e.what());
  }
}

namespace {

int64_t integer_at(const json& r, const std::string& path) {
  const json& v = field(r, path);
  if (!v.is_number()) throw std::runtime_error(fmt::format("the peer's report: field '{}' is not a number", path));
  return v.get<int64_t>();
}

// The peer's steps, as it recorded them (scripts/peer.py: one record per
// step, every step timed alike), for the harness's own rules.
TimedSteps timed_steps_of(const json& r) {
  const json& records = field(r, "records");
  if (!records.is_array() || records.empty())
    throw std::runtime_error("the peer's report: field 'records' is not a non-empty list of steps");
  TimedSteps t;
  t.timer_method = field(r, "timing.timer").get<std::string>();
  t.wall_before_ms = field(r, "timing.wall_before_ms").get<double>();
  const json& steal_before = field(r, "timing.steal_before_ms");
  if (const json& slow = r["timing"].value("test_slowdown_pct", json()); slow.is_number())
    t.test_slowdown_pct = slow.get<double>();
  t.peak_rss_reset = field(r, "memory.peak_rss_reset").get<bool>();
  t.device_total_bytes = integer_at(r, "environment.device.memory_bytes");
  const bool cuda = field(r, "config.device").get<std::string>().rfind("cuda", 0) == 0;
  for (const json& x : records) {
    StepRecord s;
    s.step = x.at("step").get<int64_t>();
    s.dt_ms = x.at("dt_ms").get<double>();
    s.tokens = x.at("tokens").get<int64_t>();
    s.tokens_per_s = double(s.tokens) / (s.dt_ms * 1e-3);
    s.loss = x.at("loss").is_number() ? x.at("loss").get<double>() : NAN;
    s.grad_norm = x.at("grad_norm").is_number() ? x.at("grad_norm").get<double>() : NAN;
    s.lr = x.at("lr").get<double>();
    s.data_ms = x.at("data_ms").get<double>();
    s.has_memory = true;
    s.memory.cuda = cuda;
    s.memory.peak_rss_bytes = x.at("peak_rss_bytes").get<int64_t>();
    if (cuda) {
      s.memory.peak_active_bytes = x.at("peak_active_bytes").get<int64_t>();
      s.memory.peak_reserved_bytes = x.at("peak_reserved_bytes").get<int64_t>();
      s.memory.peak_allocated_bytes = x.at("peak_allocated_bytes").get<int64_t>();
      s.memory.alloc_retries = x.at("alloc_retries").get<int64_t>();
      s.memory.ooms = x.at("ooms").get<int64_t>();
    }
    t.steps.push_back(s);
    t.wall_ms.push_back(x.at("wall_ms").get<double>());
    if (steal_before.is_number() && x.at("steal_ms").is_number()) t.steal_ms.push_back(x.at("steal_ms").get<double>());
  }
  if (t.steal_ms.size() == t.steps.size()) t.steal_before_ms = steal_before.get<double>();
  else t.steal_ms.clear();
  return t;
}

}  // namespace

json complete_peer_report(const json& r, const RunConfig& cfg, const std::string& roofline_file) {
  HarnessResult h;
  try {
    h = harness_result_of(timed_steps_of(r), cfg);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("the peer's report: a step record is malformed: {}", e.what()));
  }
  MeasuredRun m;
  m.cfg = cfg;
  m.run_id = r.value("run_id", "");
  m.started_at = field(r, "started_at").get<std::string>();
  m.device = parse_device(cfg.device);
  m.device_name = field(r, "environment.device.name").get<std::string>();
  m.environment = fields::from_json<EnvironmentSection>(field(r, "environment"), "the peer's report: environment");
  m.switches = fields::from_json<SwitchEffects>(field(r, "switches"), "the peer's report: switches");
  m.data = fields::from_json<DataSection>(field(r, "data"), "the peer's report: data");
  m.n_params = integer_at(r, "model.n_params");
  m.n_params_without_wpe = integer_at(r, "model.n_params_without_wpe");
  m.op_breakdown = peer_op_breakdown(r.value("op_breakdown", json()), m.device.is_cuda(), &m.op_counts);
  m.cpu_allocator = fields::from_json<std::optional<CpuAllocatorSection>>(field(r, "memory.cpu_allocator"),
                                                                        "the peer's report: memory.cpu_allocator");
  m.memory_monitor = field(r, "memory.monitor").get<std::string>();
  m.data_time = field(r, "timing.data_time").get<std::string>();
  m.roofline = read_roofline_in_use(roofline_file);
  m.roofline_probe_by = "ladder run after the peer";
  // What the peer's process says of itself: its program, its own clock.
  m.suite = fields::from_json<SuiteSection>(field(r, "suite"), "the peer's report: suite");
  m.peer = fields::from_json<PeerSection>(field(r, "peer"), "the peer's report: peer");
  m.finished_at = field(r, "finished_at").get<std::string>();
  m.parity_not_checked = kPeerParityNote;
  return build_rung_report(m, h);
}

}  // namespace ladder
