// variants/switches/fused.cpp: the fused rung, a group of parts.
//
// The rung turns on every switch whose group is "fused": fused_ln.cpp,
// fused_linear.cpp, lt_epilogues.cpp, gelu_epilogue.cpp, fused_ce.cpp,
// cast_cache.cpp, flat_grads.cpp, cuda_graph.cpp, adamw_clip.cpp. Each part
// is its own switch, so ablation measures each mechanism ("fp32+fused-ln",
// "top-cuda-graph"); the report's "fused" entry sums up its parts
// (TrainStep::describe_switches).
#include "variants/switches/switch.h"

namespace ladder::switches {

extern const SwitchDecl fused = {
    "fused", 300, SwitchRole::kGroup, nullptr,
    "fused kernels: residual+LayerNorm, GEMM epilogues, classifier, weights cast once a step, flat gradients; "
    "CUDA graphs on CUDA",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false, /*apply=*/nullptr, /*describe=*/nullptr,
};

}  // namespace ladder::switches
