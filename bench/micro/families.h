// bench/micro/families.h: the micro-benchmark families, one per mechanism of
// the ladder, each defined in its own file of bench/micro/.
#pragma once

#include <vector>

#include "bench/micro/harness.h"

namespace ladder::micro {

extern const Family kMatmulFamily;        // matmul.cpp: tf32 / bf16
extern const Family kAttentionFamily;     // attention.cpp: flash
extern const Family kCrossEntropyFamily;  // cross_entropy.cpp: vocab-pad
extern const Family kAdamWFamily;         // adamw.cpp: fused-adamw
extern const Family kMlpFamily;           // mlp.cpp: fused-linear (the MLP as one node)
extern const Family kGemmSitesFamily;     // gemm_sites.cpp: fused-linear's epilogue GEMMs, site by site
extern const Family kLayerNormFamily;     // layernorm.cpp: fused-ln (residual add + LayerNorm)
extern const Family kAllReduceFamily;     // allreduce.cpp: ddp

// In the order they run.
inline std::vector<const Family*> all_families() {
  return {&kMatmulFamily, &kAttentionFamily, &kCrossEntropyFamily, &kAdamWFamily,
          &kMlpFamily,    &kGemmSitesFamily, &kLayerNormFamily, &kAllReduceFamily};
}

}  // namespace ladder::micro
