// bench/measure/harness/op_breakdown.h: where one step's time goes, and how many operators
// and kernels it runs: the report's op_breakdown and op_counts.
//
// After the measured steps the harness runs a few extra steps under a
// collector, timed like measured steps (so the breakdown is compared with
// the harness's own dt of those same steps):
//  - CPU: LibTorch's Kineto profiler records every operator and range of the
//    step; profiler/trace/op_categories.h turns their self times into categories
//    that sum to the step's span. op_counts: aten:: operators per step.
//  - CUDA: one step under Kineto (CPU + CUDA) counts operators, kernels and
//    memcpy/memset; then the breakdown steps run under CUPTI
//    (profiler/trace/kernel_activity.h), which gives kernel time by category, idle
//    device time and kernel launches per step without Kineto's per-operator
//    host overhead. Without CUPTI the breakdown says why it is unavailable.
// These steps come after the measured ones and never count in the figures.
#pragma once

#include <cstdint>

#include <optional>

#include <torch/torch.h>

#include "bench/measure/observers/step_observer.h"
#include "profiler/trace/breakdown_section.h"
#include "variants/step/step.h"

namespace ladder {

// Steps the breakdown is taken over: two, so that the whole kernel table
// (op_breakdown.kernels) holds every kernel of a step and not one step's
// accident, and `ladder compare --kernels` sees calls per step.
inline constexpr int64_t kProfiledSteps = 2;

struct OpProfile {
  std::optional<profiler::OpCounts> op_counts;
  std::optional<profiler::OpBreakdownSection> op_breakdown;
};

// Runs its extra steps from step `first` (after the measured ones), with
// `inner` innermost on their observers (a test hook, or none).
OpProfile profile_ops(TrainStep& step, const torch::Device& device, int64_t first,
                      int64_t breakdown_steps = kProfiledSteps, StepObserver* inner = nullptr);

}  // namespace ladder
