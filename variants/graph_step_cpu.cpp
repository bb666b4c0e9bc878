// variants/graph_step_cpu.cpp: builds without CUDA have no CUDA graphs.
#include "variants/graph_step.h"

namespace ladder {

std::unique_ptr<GraphedMicroStep> capture_micro_step(const MicroStepFn&, const torch::Tensor& x,
                                                      const torch::Tensor&) {
  TORCH_CHECK(false, "capture_micro_step: this build has no CUDA support (device ", x.device(), ")");
}

}  // namespace ladder
