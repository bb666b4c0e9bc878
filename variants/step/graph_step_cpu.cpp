// variants/step/graph_step_cpu.cpp: builds without CUDA have no CUDA graphs.
#include "variants/step/graph_step.h"

namespace ladder {

GraphPoolId new_graph_pool() { return {0, 0}; }

std::unique_ptr<GraphedStep> capture_step(const StepFn&, int, const StepFn&, const torch::Tensor& x,
                                          const torch::Tensor&, GraphPoolId) {
  TORCH_CHECK(false, "capture_step: this build has no CUDA support (device ", x.device(), ")");
}

}  // namespace ladder
