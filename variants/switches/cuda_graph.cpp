// variants/switches/cuda_graph.cpp: micro-steps captured once and replayed as
// CUDA graphs (variants/step/graph_step.h); with fused-adamw the last micro-step's
// graph also clips, steps the optimizer and zeroes the gradients.
#include "variants/switches/switch.h"

#include <fmt/format.h>

#include "variants/config/config.h"

namespace ladder::switches {

extern const SwitchDecl cuda_graph = {
    "cuda-graph", 370, SwitchRole::kPart, &fused,
    "the step replayed as CUDA graphs (one launch per micro-step)",
    Numerics::kFp32Exact, {&flat_grads}, /*cuda_only=*/true,
    // A graph needs its gradients at fixed addresses (the flat buffer) and
    // cannot hold the ddp rung's all-reduce hooks, which run on the host.
    [](const RunConfig& c, StepPlan& p) {
      if (c.sw.on(switches::ddp))
        p.stand_down(switches::cuda_graph, "the ddp rung's all-reduce hooks run on the host during backward");
      else if (!p.acts(switches::flat_grads))
        p.stand_down(switches::cuda_graph, "needs flat-grads: a graph replays gradients at fixed addresses");
      else if (c.device.rfind("cuda", 0) != 0)
        p.acting.set(switches::cuda_graph, false);  // CUDA only: reported as such (switch.h)
    },
    [](const SwitchFacts& f) {
      auto j = SwitchEffect::on(f.graph_captured,
                             f.optimizer_in_graph ? "CUDA graph per step: forward, backward, clip, fused AdamW"
                                                  : "CUDA graph per micro-step (the optimizer runs eagerly: it "
                                                    "needs fused-adamw to be captured)",
                             f.graph_captured ? fmt::format("{} graph launches over {} steps", f.graph_replays,
                                                            f.steps_run)
                                              : "no CUDA graph was captured");
      j.fusions = std::vector<std::string>{f.optimizer_in_graph ? "cuda_graph_whole_step" : "cuda_graph_forward_backward"};
      j.cuda_graph = CudaGraphFacts{f.optimizer_in_graph, f.cfg.micro_steps(), f.graph_replays, f.steps_run};
      return j;
    },
};

}  // namespace ladder::switches
