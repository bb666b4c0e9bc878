// variants/work_model.h: a training step's work, site by site: what each op
// of the step computes and moves, per optimizer step, from the config and the
// rung's plan, not from a profiler (variants/ops/work.h; each op declares its
// own sites beside itself).
//
// The step's sites in order: the model's (embeddings, attention, GELU,
// residual adds: model.h), the LayerNorms (add_layer_norm.h), the GEMMs of
// the four block linears and the classifier, forward, input and weight
// gradient (gemm_sites.h: step_gemms, the one list of the step's GEMMs), the
// loss (cross_entropy.h), the bf16 casts (cast_cache.h), the gradients'
// accumulation and zeroing (grad_buffer.h), the optimizer (optim.h) and the
// ddp rung's collectives (ddp/grad_sync.h).
#pragma once

#include <cstdint>

#include "variants/config/config.h"
#include "variants/switches/switch.h"
#include "variants/ops/work.h"

namespace ladder {

// The shape one rank's micro-step runs at: B, T and the model from `cfg`, V
// its vocabulary, Vp the model's (vocab-pad), the micro-steps of one
// optimizer step, and 2-byte matmul operands when `bf16_matmuls` (the bf16
// switch acts and took effect).
WorkShape work_shape(const RunConfig& cfg, bool bf16_matmuls);

// How the rung runs its ops, from its plan: the cuBLASLt epilogues only on
// CUDA (on a CPU the fused linears run ATen's ops), the cast cache only with
// bf16 matmuls, the clip in the AdamW kernel only where the flat buffer and
// the fused AdamW both act. `n_params`: the model's parameters.
WorkFlags work_flags(const RunConfig& cfg, const StepPlan& plan, bool on_cuda, bool bf16_matmuls,
                     int64_t n_params);

// Every site of one optimizer step, in step order.
WorkList step_work(const WorkShape& shape, const WorkFlags& flags);

// The FLOPs of the matmul-bound sites (GEMMs and attention's matmuls) per
// optimizer step.
double matmul_flops(const WorkList& work);

// What the MFU formula (bench/measure/roofline/mfu.h: 6 N + 12 L C T per token) counts
// beyond matmul_flops(step_work(...)) per optimizer step, declared term by
// term: 6 FLOPs a token for each parameter that is no matmul weight (the
// biases and LayerNorms, 13 C a block and ln_f's 2 C; the formula counts
// them, the work model counts matmuls only); attention at the full T x T
// (12 L C T a token) where a causal kernel computes T(T+1)/2 pairs (2 + 5
// causal matmuls of N C (T + 1) FLOPs a layer: flash) or where the explicit
// attention computes exactly the formula's; and act-ckpt's recomputed block
// forward (its GEMMs and attention matmuls again), which the formula leaves
// out (negative).
double mfu_formula_excess_flops(const WorkShape& shape, const WorkFlags& flags);

}  // namespace ladder
