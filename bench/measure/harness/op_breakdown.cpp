// bench/measure/harness/op_breakdown.cpp: see op_breakdown.h.
#include "bench/measure/harness/op_breakdown.h"

#include <memory>
#include <numeric>

#include <ATen/record_function.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include "bench/measure/device/device.h"
#include "bench/measure/harness/harness.h"
#include "profiler/trace/device_steps.h"
#include "profiler/trace/kernel_activity.h"
#include "profiler/trace/kineto_session.h"
#include "profiler/trace/op_categories.h"
#include "profiler/ranges/range.h"

namespace ladder {

namespace {

namespace pf = profiler;

// Wraps each step in ProfilerStep#N, the span the host breakdown is cut to.
class StepMarkers final : public StepObserver {
 public:
  void step_begins(int64_t step) override {
    marker_ = std::make_unique<at::RecordFunction>(at::RecordScope::USER_SCOPE);
    if (marker_->isActive()) marker_->before(pf::names::profiler_step(step));
  }
  void step_ends(int64_t) override { marker_.reset(); }

 private:
  std::unique_ptr<at::RecordFunction> marker_;
};

double mean_dt(const std::vector<StepRecord>& records) {
  double s = 0;
  for (const auto& r : records) s += r.dt_ms;
  return records.empty() ? 0.0 : s / double(records.size());
}

struct KinetoCounts {
  double cpu_ops = 0, cuda_kernels = 0, cuda_memcpy_memset = 0;  // per step
  pf::Breakdown host;   // summed over the steps
  int64_t steps = 0;
  double dt_ms = 0;     // the harness's mean dt of these steps
};

// `n` steps under Kineto: operator counts and the host breakdown.
KinetoCounts kineto_steps(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                          std::vector<StepObserver*> watchers) {
  pf::KinetoSession session({device.is_cuda(), /*record_shapes=*/false, /*profile_memory=*/false});
  session.start();
  StepMarkers markers;
  watchers.push_back(&markers);
  const auto records = run_extra_steps(step, device, first, n, watchers);
  synchronize(device);
  const auto result = session.stop();
  KinetoCounts k;
  k.dt_ms = mean_dt(records);
  for (const pf::Breakdown& b : pf::step_host_breakdowns(*result)) {
    k.host += b;
    ++k.steps;
  }
  for (const auto& ev : result->events()) {
    const std::string name = ev.name();
    if (ev.deviceType() == c10::DeviceType::CPU) {
      if (name.rfind("aten::", 0) == 0) ++k.cpu_ops;
    } else if (ev.deviceType() == c10::DeviceType::CUDA) {
      const bool copy = name.find("Memcpy") != std::string::npos || name.find("Memset") != std::string::npos;
      ++(copy ? k.cuda_memcpy_memset : k.cuda_kernels);
    }
  }
  const double per = double(std::max<int64_t>(n, 1));
  k.cpu_ops /= per;
  k.cuda_kernels /= per;
  k.cuda_memcpy_memset /= per;
  return k;
}

// Each phase's span on CUPTI's clock (a kernel counts in the phase open at
// its launch, profiler/trace/device_steps.h), and every launch of the optimizer
// phase tagged (CUPTI external correlation).
class PhaseTagger final : public StepObserver {
 public:
  explicit PhaseTagger(pf::KernelActivity& activity) : activity_(activity) {}
  void phase_begins(Phase p) override {
    spans_.push_back({pf::phase_of_range_name(phase_name(p)), activity_.now_ticks(), 0});
    activity_.push_phase(p == Phase::kOptimizer);
  }
  void phase_ends(Phase) override {
    activity_.pop_phase();
    spans_.back().end_ticks = activity_.now_ticks();
  }
  const std::vector<pf::DevicePhaseSpan>& spans() const { return spans_; }

 private:
  pf::KernelActivity& activity_;
  std::vector<pf::DevicePhaseSpan> spans_;
};

// Step spans on CUPTI's clock: from the step's first launch to the end of its
// device work.
class DeviceSpans final : public StepObserver {
 public:
  DeviceSpans(pf::KernelActivity& activity, const torch::Device& device) : activity_(activity), device_(device) {}
  void step_begins(int64_t) override { spans_.push_back({activity_.now_ticks(), 0, 0}); }
  void step_ends(int64_t) override {
    synchronize(device_);
    spans_.back().end_ticks = activity_.now_ticks();
  }
  std::vector<pf::DeviceStepSpan>& spans() { return spans_; }

 private:
  pf::KernelActivity& activity_;
  torch::Device device_;
  std::vector<pf::DeviceStepSpan> spans_;
};

pf::OpBreakdownSection device_breakdown(TrainStep& step, const torch::Device& device, int64_t first, int64_t n,
                                        std::vector<StepObserver*> watchers) {
  const std::string source = "cupti: CUDA kernels";
  std::unique_ptr<pf::KernelActivity> activity;
  try {
    activity = pf::start_kernel_activity();
  } catch (const pf::KernelActivityUnavailable& e) {
    return pf::OpBreakdownSection::unavailable_from(source, e.what());
  }
  PhaseTagger tagger(*activity);
  DeviceSpans spans(*activity, device);
  pf::LayerSpans layers([a = activity.get()] { return a->now_ticks(); });  // with --layer-ranges
  // The tagger inside the spans: a step's span opens before its first phase.
  watchers.push_back(&tagger);
  watchers.push_back(&spans);
  const auto records = run_extra_steps(step, device, first, n, watchers);
  const pf::KernelActivityRecords rec = activity->stop();
  for (size_t i = 0; i < records.size() && i < spans.spans().size(); ++i) spans.spans()[i].dt_ms = records[i].dt_ms;
  const pf::DeviceSteps d = pf::analyse_device_steps(rec, spans.spans(), tagger.spans(), layers.spans());
  const double per = double(std::max<int64_t>(d.steps, 1));
  const double dt = d.dt_ms / per;
  pf::OpBreakdownSection b = pf::breakdown_section(source, d.total, d.steps, dt);
  b.kernel_launches_per_step = double(d.total.kernels) / per;
  b.memcpy_memset_per_step = double(d.total.memcpy_memset) / per;
  b.graph_launches_per_step = double(d.graph_launches) / per;
  b.dropped_records = rec.dropped_records;
  b.duplicate_records_removed = d.duplicates_removed;
  b.clock = pf::CuptiClock{d.ticks_per_ns,
                           "CUPTI timestamps converted to ns against CLOCK_MONOTONIC sampled at start and stop "
                           "(another CUPTI client, e.g. Kineto, may have registered a TSC clock)"};
  pf::add_invariant(b, pf::check_busy_within_dt(d.total.busy_ms / per, dt));
  return b;
}

}  // namespace

OpProfile profile_ops(TrainStep& step, const torch::Device& device, int64_t first, int64_t breakdown_steps,
                      StepObserver* inner) {
  OpProfile out;
  std::vector<StepObserver*> watchers;
  if (inner) watchers.push_back(inner);
  auto rounded = [](double per_step) { return int64_t(per_step + 0.5); };
  if (!device.is_cuda()) {
    const KinetoCounts k = kineto_steps(step, device, first, breakdown_steps, watchers);
    out.op_counts = pf::OpCounts{rounded(k.cpu_ops), 0, 0, "kineto"};
    pf::OpBreakdownSection b = pf::breakdown_section("kineto: CPU operators", k.host, k.steps, k.dt_ms);
    b.ops_per_step = k.cpu_ops;
    pf::add_invariant(b, pf::check_busy_within_dt(k.host.busy_ms / double(std::max<int64_t>(k.steps, 1)), k.dt_ms));
    out.op_breakdown = std::move(b);
    return out;
  }
  const KinetoCounts k = kineto_steps(step, device, first, 1, watchers);
  out.op_counts = pf::OpCounts{rounded(k.cpu_ops), rounded(k.cuda_kernels), rounded(k.cuda_memcpy_memset), "kineto"};
  out.op_breakdown = device_breakdown(step, device, first + 1, breakdown_steps, watchers);
  return out;
}

}  // namespace ladder
