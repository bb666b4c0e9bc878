// variants/work_model.cpp: see work_model.h.
#include "variants/work_model.h"

#include "variants/ops/add_layer_norm/add_layer_norm.h"
#include "variants/ops/cast_cache.h"
#include "variants/ops/cross_entropy/cross_entropy.h"
#include "variants/ddp/grad_sync.h"
#include "variants/planners/gemm_sites.h"
#include "variants/ops/grad_buffer.h"
#include "variants/model/model.h"
#include "variants/optim/optim.h"

namespace ladder {

WorkShape work_shape(const RunConfig& cfg, bool bf16_matmuls) {
  WorkShape s;
  s.batch = cfg.batch;
  s.seq = cfg.seq;
  s.n_embd = cfg.model.n_embd;
  s.n_head = cfg.model.n_head;
  s.n_layer = cfg.model.n_layer;
  s.vocab = cfg.model.vocab_size;
  s.model_vocab = cfg.model_vocab();
  s.act_bytes = bf16_matmuls ? 2 : 4;
  s.micro_steps = cfg.micro_steps();
  return s;
}

WorkFlags work_flags(const RunConfig& cfg, const StepPlan& plan, bool on_cuda, bool bf16_matmuls,
                     int64_t n_params) {
  const ModelOptions& m = plan.model;
  WorkFlags f;
  f.flash = m.flash;
  f.fused_ln = m.fused_ln;
  f.fused_linear = m.fused_linear;
  f.lt_epilogues = on_cuda && m.fused_linear && m.linear.lt_epilogues;
  f.gelu_epilogue = f.lt_epilogues && m.linear.gelu_epilogue;
  f.fused_ce = m.fused_ce;
  f.grads_into_buffers = m.linear.grads_into_buffers;
  f.flat_grads = plan.acts(switches::flat_grads);
  f.cast_cache = bf16_matmuls && plan.acts(switches::cast_cache);
  f.clip_in_kernel = f.flat_grads && plan.acts(switches::adamw_clip) && plan.acts(switches::fused_adamw);
  f.act_ckpt = m.checkpoint_blocks;
  f.world = plan.acts(switches::ddp) ? cfg.world_size : 1;
  f.zero1 = plan.acts(switches::zero1);
  f.n_params = n_params;
  f.on_cuda = on_cuda;
  f.first_writes = !on_cuda && f.flat_grads && f.grads_into_buffers && f.world == 1;  // TrainStep's write_first
  f.embedding_into_grad = !on_cuda && f.grads_into_buffers;  // GPTImpl::token_embeddings
  // TrainStep: graphed on CUDA with the flat buffer and one process; the optimizer in the graph with the fused AdamW.
  f.optimizer_in_graph = on_cuda && plan.acts(switches::cuda_graph) && f.flat_grads && f.world == 1 && plan.acts(switches::fused_adamw);
  return f;
}

WorkList step_work(const WorkShape& s, const WorkFlags& f) {
  WorkList work;
  add_model_work(s, f, work);
  fused::add_layer_norm_work(s, f, work);
  add_gemm_work(s, f, work);
  fused::add_loss_work(s, f, work);
  add_cast_work(s, f, work);
  add_gradient_work(s, f, work);
  add_optimizer_work(s, f, work);
  add_collective_work(s, f, work);
  return work;
}

double matmul_flops(const WorkList& work) {
  double total = 0;
  for (const SiteWork& w : work.sites())
    if (w.bound == WorkBound::kMatmul) total += w.flops * double(w.count);
  return total;
}

double mfu_formula_excess_flops(const WorkShape& s, const WorkFlags& f) {
  const double C = double(s.n_embd), L = double(s.n_layer), T = double(s.seq), N = double(s.rows());
  const double tokens = N * double(s.micro_steps), micro = double(s.micro_steps);
  const double non_matmul_params = 6 * (13 * C * L + 2 * C) * tokens;
  const double formula_attention = 12 * L * C * T * tokens;
  // Attention's matmuls a layer and micro-step, forward and backward, and the forward's share.
  const double attention = f.flash ? 7 * N * C * (T + 1) : 12 * N * T * C;
  const double attention_forward = f.flash ? 2 * N * C * (T + 1) : 4 * N * T * C;
  const double recompute = f.act_ckpt ? (2 * N * 12 * C * C * L + L * attention_forward) * micro : 0;
  return non_matmul_params + formula_attention - L * attention * micro - recompute;
}

}  // namespace ladder
