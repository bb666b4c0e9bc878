// bench/run_command.cpp: `ladder run` (see run_command.h).
#include "bench/run_command.h"

#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "bench/cli.h"
#include "bench/device.h"
#include "bench/environment.h"
#include "bench/harness.h"
#include "bench/memory.h"
#include "bench/mfu.h"
#include "bench/progress.h"
#include "bench/roofline.h"
#include "bench/stats.h"
#include "build_info.h"
#include "reports/atomic_file.h"
#include "reports/report.h"
#include "variants/data.h"
#include "variants/step.h"

namespace ladder {

namespace {

// Explicit CLI values, applied on top of the chosen preset.
struct Overrides {
  std::optional<std::string> preset, device;
  std::optional<int64_t> batch, seq, n_layer, n_head, n_embd, block_size, vocab;
};

}  // namespace

bool parse_run_args(const std::vector<std::string>& args, RunRequest& req) {
  Overrides o;
  RunConfig& c = req.cfg;
  std::optional<int64_t> steps, warmup, threads, lr_warmup, lr_decay;
  std::optional<double> lr, min_lr_ratio, weight_decay, grad_clip, peak;
  std::optional<uint64_t> seed;
  bool breakdown = false, fixed_batch = false;

  std::string preset_names;
  for (const auto& p : presets()) preset_names += (preset_names.empty() ? "" : "|") + p.name;
  ArgParser ap("run",
               "Measure the GPT-2 training step (FP32 baseline rung) and write a JSON report.\n"
               "Defaults: --device cuda when available, else cpu; --preset gpt2-124m on CUDA,\n"
               "cpu-default on CPU. Every model field can be overridden.");
  auto integer = [](std::optional<int64_t>& dst, const char* name) {
    return [&dst, name](const std::string& v) { dst = parse_int(name, v); };
  };
  auto number = [](std::optional<double>& dst, const char* name) {
    return [&dst, name](const std::string& v) { dst = parse_double(name, v); };
  };
  ap.add_value("--device", "cpu|cuda|cuda:N", "device to run on", [&](const std::string& v) { o.device = v; });
  ap.add_value("--preset", preset_names, "model preset", [&](const std::string& v) { o.preset = v; });
  ap.add_value("--batch", "B", "micro-batch size (sequences per step)", integer(o.batch, "--batch"));
  ap.add_value("--seq", "T", "sequence length (<= block size)", integer(o.seq, "--seq"));
  ap.add_value("--steps", "N", "measured steps (default 10)", integer(steps, "--steps"));
  ap.add_value("--warmup", "N", "warmup steps excluded from figures (default 2)", integer(warmup, "--warmup"));
  ap.add_value("--seed", "S", "seed for weights and synthetic data (default 1337)",
               [&](const std::string& v) {
                 const int64_t s = parse_int("--seed", v);
                 if (s < 0) throw ConfigError(fmt::format("--seed: got {}, expected >= 0", s));
                 seed = uint64_t(s);
               });
  ap.add_value("--out", "RUN_DIR", "run directory (default runs/<run_id>)",
               [&](const std::string& v) { req.out_dir = v; });
  ap.add_value("--threads", "N", "intra-op CPU threads (default: all cores)", integer(threads, "--threads"));
  ap.add_value("--n-layer", "L", "override the preset's layer count", integer(o.n_layer, "--n-layer"));
  ap.add_value("--n-head", "H", "override the preset's head count", integer(o.n_head, "--n-head"));
  ap.add_value("--n-embd", "C", "override the preset's width", integer(o.n_embd, "--n-embd"));
  ap.add_value("--block-size", "N", "override the preset's block size", integer(o.block_size, "--block-size"));
  ap.add_value("--vocab", "V", "override the preset's vocabulary size", integer(o.vocab, "--vocab"));
  ap.add_value("--lr", "X", "peak learning rate (default 6e-4)", number(lr, "--lr"));
  ap.add_value("--min-lr-ratio", "X", "cosine floor as a fraction of --lr (default 0.1)",
               number(min_lr_ratio, "--min-lr-ratio"));
  ap.add_value("--lr-warmup", "N", "linear LR warmup steps (default 10)", integer(lr_warmup, "--lr-warmup"));
  ap.add_value("--lr-decay-steps", "N", "cosine horizon (default: warmup + steps)",
               integer(lr_decay, "--lr-decay-steps"));
  ap.add_value("--weight-decay", "X", "AdamW weight decay on 2D+ tensors (default 0.1)",
               number(weight_decay, "--weight-decay"));
  ap.add_value("--grad-clip", "X", "global grad-norm clip (default 1.0)", number(grad_clip, "--grad-clip"));
  ap.add_value("--peak-tflops", "X", "peak TFLOPS for MFU, overriding the datasheet table",
               number(peak, "--peak-tflops"));
  ap.add_flag("--breakdown", "time data/forward/backward/optimizer (synchronises; perturbs dt)",
              [&] { breakdown = true; });
  ap.add_flag("--fixed-batch", "every step sees the same batch (overfitting checks)",
              [&] { fixed_batch = true; });
  ap.add_value("--save-init", "FILE", "write the initial weights (torch.load-able) for scripts/reference.py",
               [&](const std::string& v) { req.save_init = v; });
  ap.add_flag("--quiet", "no progress line or table", [&] { req.quiet = true; });
  if (!ap.parse(args)) return false;

  // Device first: it picks the default preset.
  c.device = o.device.value_or(default_device_spec());
  const bool on_cuda = c.device.rfind("cuda", 0) == 0;
  const Preset& preset = find_preset(o.preset.value_or(on_cuda ? "gpt2-124m" : "cpu-default"));
  c.preset = preset.name;
  c.model = preset.model;
  c.batch = preset.batch;
  c.seq = preset.seq;
  if (o.n_layer) c.model.n_layer = *o.n_layer;
  if (o.n_head) c.model.n_head = *o.n_head;
  if (o.n_embd) c.model.n_embd = *o.n_embd;
  if (o.block_size) c.model.block_size = *o.block_size;
  if (o.vocab) c.model.vocab_size = *o.vocab;
  if (o.batch) c.batch = *o.batch;
  if (o.seq) c.seq = *o.seq;
  if (steps) c.steps = *steps;
  if (warmup) c.warmup = *warmup;
  if (seed) c.seed = *seed;
  if (threads) c.threads = int(*threads);
  if (lr) c.train.max_lr = *lr;
  if (min_lr_ratio) c.train.min_lr_ratio = *min_lr_ratio;
  if (lr_warmup) c.train.lr_warmup_steps = *lr_warmup;
  if (lr_decay) c.train.lr_decay_steps = *lr_decay;
  if (weight_decay) c.train.weight_decay = *weight_decay;
  if (grad_clip) c.train.grad_clip = *grad_clip;
  if (peak) c.peak_tflops = *peak;
  c.breakdown = breakdown;
  c.fixed_batch = fixed_batch;
  c.validate();
  return true;
}

namespace {

void save_initial_weights(GPT& model, const std::string& path) {
  c10::Dict<std::string, torch::Tensor> dict;
  for (const auto& item : model->named_parameters())
    dict.insert(item.key(), item.value().detach().to(torch::kCPU).clone());
  const auto bytes = torch::pickle_save(c10::IValue(dict));
  write_file_atomically(path, std::string(bytes.begin(), bytes.end()));
}

nlohmann::json mfu_section(const RunConfig& c, const std::string& dev_name, double tokens_per_s,
                           int64_t fpt, const RooflineResult& roof) {
  const Precision precision = Precision::kFP32;
  nlohmann::json datasheet = {{"peak_tflops", nullptr}, {"device", nullptr}, {"source", nullptr},
                              {"mfu_pct", nullptr}};
  if (c.peak_tflops) {
    datasheet = {{"peak_tflops", *c.peak_tflops}, {"device", dev_name},
                 {"source", "--peak-tflops override"},
                 {"mfu_pct", mfu_pct(tokens_per_s, fpt, *c.peak_tflops)}};
  } else if (auto peak = datasheet_peak(dev_name, precision)) {
    datasheet = {{"peak_tflops", peak->tflops}, {"device", peak->device}, {"source", peak->source},
                 {"mfu_pct", mfu_pct(tokens_per_s, fpt, peak->tflops)}};
  }
  return {{"precision", precision_name(precision)},
          {"tokens_per_s_basis", "median tokens_per_s_per_device"},
          {"datasheet", datasheet},
          {"measured_roofline",
           {{"peak_tflops", roof.tflops}, {"probe", roof}, {"mfu_pct", mfu_pct(tokens_per_s, fpt, roof.tflops)}}}};
}

std::string gib(int64_t bytes) { return fmt::format("{:.2f} GiB", double(bytes) / (1 << 30)); }

void print_table(const nlohmann::json& r, const std::string& path) {
  const auto& s = r["summary"];
  const auto& mfu = r["mfu"];
  const auto& mem = r["memory"]["measured"];
  const bool cuda = r["environment"]["device"]["kind"] == "cuda";
  const auto ds = mfu["datasheet"]["mfu_pct"];
  const std::string ds_text = ds.is_null() ? "n/a" : fmt::format("{:.1f}%", ds.get<double>());
  const auto& loss = r["steps"]["loss"];
  fmt::print("\n{:<8} {:>10} {:>8} {:>11} {:>10} {:>10} {:>14} {:>18}\n", "rung", "dt_ms", "cv",
             "tok/s", "MFU(sheet)", "MFU(probe)", cuda ? "peak_reserved" : "peak_rss", "loss first->last");
  fmt::print("{:<8} {:>10.2f} {:>7.1f}% {:>11.0f} {:>10} {:>9.1f}% {:>14} {:>8.4f}->{:<8.4f}\n",
             r["rung"].get<std::string>(), s["dt_ms"]["median"].get<double>(),
             100 * s["dt_ms"]["cv"].get<double>(), s["tokens_per_s"]["median"].get<double>(), ds_text,
             mfu["measured_roofline"]["mfu_pct"].get<double>(),
             gib(cuda ? mem["peak_reserved_bytes"].get<int64_t>() : mem["peak_rss_bytes"].get<int64_t>()),
             loss.front().get<double>(), loss.back().get<double>());
  fmt::print("flops/token {} | matmul probe {:.3f} TFLOPS ({}) | harness overhead {:.3f} ms/step ({:.3f}% of dt)\n",
             r["flops"]["flops_per_token"].get<int64_t>(),
             mfu["measured_roofline"]["peak_tflops"].get<double>(),
             mfu["measured_roofline"]["probe"]["dtype"].get<std::string>(),
             r["timing"]["harness_overhead_ms_per_step"].get<double>(),
             r["timing"]["harness_overhead_pct_of_dt"].get<double>());
  fmt::print("report: {}\n", path);
}

}  // namespace

int run_command(const std::vector<std::string>& args, const std::vector<std::string>& argv) {
  RunRequest req;
  if (!parse_run_args(args, req)) return 0;
  RunConfig& c = req.cfg;
  const torch::Device device = parse_device(c.device);
  req.run_id = new_run_id();
  if (req.out_dir.empty()) req.out_dir = (std::filesystem::path("runs") / req.run_id).string();
  ensure_writable_dir(req.out_dir, "--out");
  if (!req.save_init.empty()) {
    const auto parent = std::filesystem::path(req.save_init).parent_path();
    if (!parent.empty()) ensure_writable_dir(parent.string(), "--save-init");
  }

  // LibTorch may default to one intra-op thread on a VM: set it explicitly.
  if (c.threads == 0) c.threads = int(std::max(1u, std::thread::hardware_concurrency()));
  at::set_num_threads(c.threads);

  const std::string started_at = utc_now_iso8601();
  SyntheticSpec spec{c.batch, c.seq, c.model.vocab_size, c.seed};
  spec.fixed_batch = c.fixed_batch;
  TrainStep step(c, device, make_synthetic_source(spec));
  if (!req.save_init.empty()) save_initial_weights(step.model(), req.save_init);

  const int64_t n_params = step.model()->num_params();
  const int64_t n_params_no_wpe = step.model()->num_params(/*exclude_position_embeddings=*/true);
  const int64_t fpt = flops_per_token(c.model, n_params_no_wpe, c.seq);

  Progress progress(c.rung, c.warmup, c.steps, req.quiet);
  HarnessResult result = run_measurement(
      step, c, device, [&](const StepRecord& rec, bool warmup) { progress.update(rec, warmup); });
  progress.finish();
  const RooflineResult roof = probe_matmul(device, Precision::kFP32);

  const int world_size = 1;
  nlohmann::json summary = summarize_steps(result.steps, world_size);
  const double tok_s = summary["tokens_per_s_per_device"]["median"].get<double>();
  const std::string dev_name = device_name(device);
  const double dt_median = summary["dt_ms"]["median"].get<double>();
  std::vector<double> mfu_steps;
  for (const auto& s : result.steps) mfu_steps.push_back(mfu_pct(s.tokens_per_s / world_size, fpt, roof.tflops));
  summary["mfu_pct_measured_roofline"] = summarize(mfu_steps);

  const MemoryEstimate estimate = estimate_memory(c.model, n_params, c.batch, c.seq);
  const auto& m = result.memory;
  const int64_t peak = device.is_cuda() ? m.peak_reserved_bytes : m.peak_rss_bytes;
  nlohmann::json measured = {
      {"peak_allocated_bytes", device.is_cuda() ? nlohmann::json(m.peak_allocated_bytes) : nlohmann::json()},
      {"peak_reserved_bytes", device.is_cuda() ? nlohmann::json(m.peak_reserved_bytes) : nlohmann::json()},
      {"peak_active_bytes", device.is_cuda() ? nlohmann::json(m.peak_active_bytes) : nlohmann::json()},
      {"alloc_retries", m.alloc_retries},
      {"ooms", m.ooms},
      {"peak_rss_bytes", m.peak_rss_bytes},
      {"peak_rss_window", m.peak_rss_reset ? "measured steps (VmHWM reset at start)" : "process lifetime"},
      {"device_total_bytes", m.device_total_bytes},
      {"peak_pct_of_device", 100.0 * double(peak) / double(m.device_total_bytes)},
  };

  nlohmann::json report = {
      {"schema_version", kSchemaVersion},
      {"kind", "ladder.rung_report"},
      {"run_id", req.run_id},
      {"rung", c.rung},
      {"status", "ok"},
      {"started_at", started_at},
      {"finished_at", utc_now_iso8601()},
      {"suite", {{"name", "ladder"}, {"version", build_info::kVersion},
                 {"git_commit", build_info::kGitCommit}, {"argv", argv}}},
      {"config", c},
      {"environment", describe_environment(device)},
      {"world_size", world_size},
      {"data", step.data().describe()},
      {"model", {{"n_params", n_params}, {"n_params_without_wpe", n_params_no_wpe}}},
      {"timing", {{"mode", result.timing_mode}, {"timer", result.timer_method},
                  {"warmup_steps_excluded", c.warmup}, {"measured_steps", c.steps},
                  {"measured_wall_ms", result.measured_wall_ms},
                  {"harness_overhead_ms_per_step", result.harness_overhead_ms_per_step},
                  {"harness_overhead_pct_of_dt", 100.0 * result.harness_overhead_ms_per_step / dt_median}}},
      {"flops", {{"flops_per_token", fpt}, {"formula", kFlopsFormula},
                 {"flops_per_step", double(fpt) * double(c.tokens_per_step())}}},
      {"throughput", {{"tokens_per_step", c.tokens_per_step()},
                      {"tokens_per_s_aggregate", summary["tokens_per_s"]["median"]},
                      {"tokens_per_s_per_device", tok_s}}},
      {"mfu", mfu_section(c, dev_name, tok_s, fpt, roof)},
      {"memory", {{"measured", measured}, {"estimate", estimate}}},
      {"steps", steps_to_json(result.steps, world_size)},
      {"warmup_steps", steps_to_json(result.warmup_steps, world_size)},
      {"summary", summary},
  };
  const std::string path = report_path(req.out_dir, c.rung);
  write_report(path, report);
  if (!req.quiet) print_table(report, path);
  return 0;
}

}  // namespace ladder
