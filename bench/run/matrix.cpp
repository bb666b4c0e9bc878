// bench/run/matrix.cpp: matrix files and cell resolution (see matrix.h).
#include "bench/run/matrix.h"

#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/measure/report/memory.h"
#include "bench/run/peers.h"
#include "reports/model/report/report_loader.h"
#include "variants/config/rungs.h"
#include "variants/config_fields.h"
#include "variants/switches/switch.h"

namespace ladder {

namespace {

// An axis of the matrix: one value or a non-empty list (an empty one would
// silently mean what leaving the key out means, `without`).
template <class T>
std::vector<T> as_list(const nlohmann::json& v, const std::string& file, const char* key,
                       const char* expected, const char* without) {
  std::vector<T> list;
  try {
    list = v.is_array() ? v.get<std::vector<T>>() : std::vector<T>{v.get<T>()};
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(fmt::format("{}: key '{}': got {}, expected {} or a list of them", file, key,
                                  v.dump(), expected));
  }
  if (list.empty())
    throw ConfigError(fmt::format("--matrix: '{}': key '{}': got [], an empty list; expected {} or a non-empty list "
                                  "of them (leave the key out for {})",
                                  file, key, expected, without));
  return list;
}

template <class T>
T as_scalar(const nlohmann::json& v, const std::string& file, const char* key, const char* expected) {
  try {
    return v.get<T>();
  } catch (const nlohmann::json::exception&) {
    throw ConfigError(fmt::format("{}: key '{}': got {}, expected {}", file, key, v.dump(), expected));
  }
}

}  // namespace

void read_matrix_file(const std::string& path, MatrixSpec& spec) {
  std::ifstream f(path);
  if (!f) throw ConfigError(fmt::format("--matrix: cannot read '{}'", path));
  std::stringstream buf;
  buf << f.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw ConfigError(fmt::format("--matrix: '{}' is not valid JSON (at byte {}): {}", path, e.byte,
                                  parse_error_text(e)));
  }
  if (!j.is_object())
    throw ConfigError(fmt::format("--matrix: '{}' must hold a JSON object, got {}", path, j.type_name()));
  // The matrix's own keys; batch and seq are also fields, but here lists (axes).
  static const std::set<std::string> kMatrixKeys = {"presets", "batch", "seq", "rungs", "mode", "device", "parity_steps"};
  for (const auto& [key, value] : j.items()) {
    if (!kMatrixKeys.count(key) && !find_field(key)) {
      std::string known;
      for (const auto& k : kMatrixKeys) known += (known.empty() ? "" : ", ") + k;
      for (const auto& f : config_fields())
        if (!kMatrixKeys.count(f.name)) known += ", " + f.name;
      throw ConfigError(fmt::format("--matrix: '{}': unknown key '{}'; expected one of: {}", path, key, known));
    }
  }
  if (j.contains("presets"))
    spec.presets = as_list<std::string>(j["presets"], path, "presets", "a preset name", "the device's default preset");
  if (j.contains("batch")) spec.batches = as_list<int64_t>(j["batch"], path, "batch", "an integer", "each preset's B");
  if (j.contains("seq")) spec.seqs = as_list<int64_t>(j["seq"], path, "seq", "an integer", "each preset's T");
  if (j.contains("rungs"))
    spec.rungs = as_list<std::string>(j["rungs"], path, "rungs", "a rung name", "the rungs of the mode");
  if (j.contains("mode")) spec.mode = as_scalar<std::string>(j["mode"], path, "mode", "\"ladder\" or \"ablation\"");
  if (j.contains("device"))
    spec.overrides.device = as_scalar<std::string>(j["device"], path, "device", "a device string");
  if (j.contains("parity_steps"))
    spec.parity_steps = as_scalar<int64_t>(j["parity_steps"], path, "parity_steps", "an integer");
  for (const auto& [key, value] : j.items()) {
    if (kMatrixKeys.count(key)) continue;
    const ConfigField& f = *find_field(key);
    spec.overrides.fields.set(key, input_from_json(f, value, fmt::format("{}: key '{}'", path, key)));
  }
}

int64_t step_memory_estimate_bytes(const RunConfig& cfg) {
  // Parameters counted from the shape: wte, wpe, per block 12C^2 + 13C, ln_f.
  const ModelConfig& m = cfg.model;
  const int64_t C = m.n_embd, V = cfg.model_vocab();
  const int64_t n_params = V * C + m.block_size * C + m.n_layer * (12 * C * C + 13 * C) + 2 * C;
  ModelConfig shape = m;
  shape.vocab_size = V;
  const StepPlan plan = plan_for(cfg);
  MemoryEstimate e = estimate_memory(shape, n_params, cfg.batch, cfg.seq, memory_options(cfg, plan));
  const bool graph = plan.acts(switches::cuda_graph);
  return e.total_bytes + (graph ? e.activation_bytes : 0);
}

namespace {

// The rungs a spec names, or its mode's; fp32 first, the baseline every shape
// needs for speedups and parity.
std::vector<Rung> rungs_of(const MatrixSpec& spec) {
  if (spec.mode != "ladder" && spec.mode != "ablation" && spec.mode != "memory")
    throw ConfigError(fmt::format("--mode: '{}' is not a mode; expected ladder, ablation or memory", spec.mode));
  if (spec.parity_steps < 1)
    throw ConfigError(fmt::format("--parity-steps: got {}, expected an integer >= 1", spec.parity_steps));
  std::vector<Rung> rungs;
  if (!spec.rungs.empty()) {
    std::set<std::string> named;
    for (const auto& name : spec.rungs) {
      // Twice would run the rung twice into one directory, the second
      // overwriting the first: --repeat is how a rung runs in more processes.
      if (!named.insert(name).second)
        throw ConfigError(fmt::format("--rungs: '{}' is named twice; expected each rung once (more processes of a "
                                      "rung: --repeat N)",
                                      name));
      rungs.push_back(parse_rung(name));
    }
  } else {
    rungs = spec.mode == "ablation" ? ablation_rungs() : spec.mode == "memory" ? memory_rungs() : ladder_rungs();
  }
  if (!rungs.empty() && rungs.front().name == base_rung().name) return rungs;
  std::vector<Rung> with_base = {base_rung()};
  for (const auto& r : rungs)
    if (r.name != base_rung().name) with_base.push_back(r);
  return with_base;
}

struct Shape {
  std::string preset;
  int64_t batch, seq;
};

std::vector<Shape> shapes_of(const MatrixSpec& spec) {
  std::vector<Shape> shapes;
  for (const auto& preset : spec.presets) {
    const Preset& p = find_preset(preset);
    const auto batches = spec.batches.empty() ? std::vector<int64_t>{p.batch} : spec.batches;
    const auto seqs = spec.seqs.empty() ? std::vector<int64_t>{p.seq} : spec.seqs;
    for (int64_t b : batches)
      for (int64_t t : seqs) shapes.push_back({preset, b, t});
  }
  return shapes;
}

// --memory-budget: a cell whose estimate per device exceeds it does not run.
void hold_to_memory_budget(const MatrixSpec& spec, Cell& cell) {
  if (!cell.runnable || spec.memory_budget_bytes <= 0) return;
  const int64_t need = step_memory_estimate_bytes(cell.cfg);
  if (need <= spec.memory_budget_bytes) return;
  cell.runnable = false;
  // GiB with enough digits that the two numbers differ (a tiny model's are MiB).
  const double gib = double(1ll << 30), need_gib = double(need) / gib,
               budget_gib = double(spec.memory_budget_bytes) / gib;
  const int digits = need_gib >= 10 ? 1 : need_gib >= 1 ? 2 : 4;
  cell.not_runnable_reason = fmt::format("does not fit (estimate {:.{}f} GiB > budget {:.{}f} GiB per device)",
                                         need_gib, digits, budget_gib, digits);
}

// A measured rung of a shape: runnable here or why not, and its parity reference.
Cell rung_cell(const MatrixSpec& spec, const RunConfig& base, const std::string& prefix, const Rung& rung) {
  Cell cell;
  cell.id = prefix + rung.name;
  cell.role = "measure";
  cell.cfg = base;
  cell.cfg.rung = rung.name;
  cell.cfg.sw = rung.sw;
  const bool ddp = rung.sw.on(switches::ddp);
  if (ddp) cell.cfg.world_size = spec.nproc_per_node;
  cell.runnable = rung_runnable(rung, spec.device, &cell.not_runnable_reason);
  if (cell.runnable && ddp && spec.nproc_per_node == 1 && !spec.ddp_requested) {
    cell.runnable = false;
    cell.not_runnable_reason =
        fmt::format("one {} here: the ddp rung would run a single rank, which times its gradient sync "
                    "but no data parallelism; ask for it by name (--rungs ddp) or with --nproc-per-node",
                    spec.device.rfind("cuda", 0) == 0 ? "GPU" : "rank");
  }
  if (cell.runnable) validate_config(cell.cfg);
  hold_to_memory_budget(spec, cell);
  if (rung.name != base_rung().name) {
    cell.parity_ref = prefix + base_rung().name;
    cell.parity_subject = cell.id;
  }
  return cell;
}

// A short parity run of `cfg` for `cell`: parity_steps steps, no warm-up, no
// traces, and the measured rung's LR horizon so the schedule is the same.
Cell parity_cell(const MatrixSpec& spec, const Cell& cell, const char* suffix, RunConfig cfg) {
  cfg.steps = spec.parity_steps;
  cfg.warmup = cfg.warmup_max = 0;
  cfg.profile.clear();
  cfg.train.lr_decay_steps = cell.cfg.total_steps();
  cfg.rung = cell.cfg.rung + suffix;
  Cell c;
  c.id = cell.id + suffix;
  c.role = "parity";
  c.cfg = cfg;
  // A reference that cannot fit either (one process holds what the ranks
  // shared): not run, and the rung's parity says it is unavailable.
  hold_to_memory_budget(spec, c);
  return c;
}

// Accumulation is checked against one step with the same rows (matrix.h):
// at most 4 micro-steps, fewer or a smaller micro-batch while that step would
// not fit in the device's memory. Adds the references to `cells` and points
// `cell` at them.
void add_accumulation_parity(const MatrixSpec& spec, const SwitchDecl& accumulating_switch, Cell& cell,
                             std::vector<Cell>& cells) {
  const int64_t world = cell.cfg.world_size;
  int64_t micro = std::min<int64_t>(cell.cfg.micro_steps(), 4);
  int64_t parity_batch = cell.cfg.batch;
  // One process, no accumulation, the same rows: B' * micro * world.
  auto single_config = [&] {
    RunConfig single = cell.cfg;
    single.sw.set(accumulating_switch, false);
    single.sw.set(switches::ddp, false);
    single.world_size = 1;
    single.batch = parity_batch * micro * world;
    return single;
  };
  auto single_fits = [&] {
    return spec.device_memory_bytes <= 0 || double(step_memory_estimate_bytes(single_config())) <=
                                                kParityMemoryFraction * double(spec.device_memory_bytes);
  };
  while (!single_fits() && micro > 2) --micro;
  while (!single_fits() && parity_batch > 1) parity_batch /= 2;
  const Cell single = parity_cell(spec, cell, ".parity-single", single_config());
  cell.parity_ref = single.id;
  if (micro != cell.cfg.micro_steps() || parity_batch != cell.cfg.batch) {
    RunConfig accum = cell.cfg;
    accum.batch = parity_batch;
    accum.total_batch = parity_batch * cell.cfg.seq * world * micro;
    const Cell accumulating = parity_cell(spec, cell, ".parity-accum", accum);
    cell.parity_subject = accumulating.id;
    cells.push_back(accumulating);
  }
  cells.push_back(single);
}

}  // namespace

std::vector<Cell> build_cells(const MatrixSpec& spec) {
  const std::vector<Rung> rungs = rungs_of(spec);
  const std::vector<Shape> shapes = shapes_of(spec);
  // A shape's cell-id prefix (none when the matrix has one shape) and config.
  auto prefix_of = [&](const Shape& shape) {
    return shapes.size() == 1 ? std::string() : fmt::format("{}-b{}-t{}/", shape.preset, shape.batch, shape.seq);
  };
  auto config_of = [&](const Shape& shape) {
    RunConfig base = config_for(shape.preset, spec.overrides, spec.device);
    base.batch = shape.batch;
    base.seq = shape.seq;
    return base;
  };
  std::vector<Cell> cells;
  for (const auto& shape : shapes) {
    const RunConfig base = config_of(shape);
    validate_config(base);
    for (const auto& rung : rungs) {
      Cell cell = rung_cell(spec, base, prefix_of(shape), rung);
      if (const SwitchDecl* same_rows = same_rows_parity_switch(rung.sw); cell.runnable && same_rows)
        add_accumulation_parity(spec, *same_rows, cell, cells);
      cells.push_back(cell);
    }
  }
  // The peers run after every rung, one cell per shape.
  for (const auto& shape : shapes)
    for (const auto& peer : spec.peers) cells.push_back(make_peer_cell(config_of(shape), prefix_of(shape), peer));
  return cells;
}

nlohmann::json cells_to_json(const std::vector<Cell>& cells) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : cells)
    out.push_back({{"id", c.id},
                   {"role", c.role},
                   {"config", c.cfg},
                   {"runnable", c.runnable},
                   {"not_runnable_reason", c.not_runnable_reason},
                   {"parity_ref", c.parity_ref},
                   {"parity_subject", c.parity_subject}});
  for (size_t i = 0; i < cells.size(); ++i)
    if (!cells[i].peer.empty()) out[i]["peer"] = cells[i].peer;
  return out;
}

}  // namespace ladder
