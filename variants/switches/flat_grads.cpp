// variants/switches/flat_grads.cpp: every gradient a view of one flat buffer
// (variants/ops/grad_buffer.h): zeroing is one memset, the clip's norm reads one
// tensor, and the fused ops add their weight and bias gradients into it in place.
#include "variants/switches/switch.h"

#include "variants/config/config.h"

namespace ladder::switches {

extern const SwitchDecl flat_grads = {
    "flat-grads", 360, SwitchRole::kPart, &fused,
    "gradients in one flat buffer; the fused ops add weight and bias gradients into it in place",
    Numerics::kFp32Exact, {}, /*cuda_only=*/false,
    // The ddp rung keeps its gradients in the all-reduce buckets instead, and
    // its hooks must see every gradient: nothing goes around autograd.
    [](const RunConfig& c, StepPlan& p) {
      if (c.sw.on(switches::ddp)) p.stand_down(switches::flat_grads, "the ddp rung keeps its gradients in the all-reduce buckets");
      p.model.linear.grads_into_buffers = p.acts(switches::flat_grads);
    },
    [](const SwitchFacts& f) {
      auto j = SwitchEffect::on(true, "FlatGradients: parameters' .grad() as views of one buffer",
                             "one memset zeroes every gradient; the clip reads one buffer");
      j.fusions = std::vector<std::string>{"flat_gradient_buffer"};
      if (f.plan.model.fused_linear || f.plan.model.fused_ce) j.fusions->push_back("weight_grads_added_into_buffer");
      // GPTImpl::token_embeddings: the rows into wte's .grad(), no dense gradient (variants/ops/embedding/embedding.h).
      if (f.plan.model.linear.grads_into_buffers && f.device.is_cpu())
        j.fusions->push_back("embedding_rows_added_into_buffer");
      return j;
    },
};

}  // namespace ladder::switches
