// variants/ops/work.h: the work of one site of a training step: its FLOPs, its
// compulsory bytes and the band of the op breakdown it lands in.
//
// Each op declares its own sites beside itself (the GEMMs in gemm_sites.h,
// LayerNorm in add_layer_norm.h, the loss in cross_entropy.h, attention,
// embeddings and GELU in model.h, the optimizer in optim.h, the casts in
// cast_cache.h, the all-reduce in ddp/grad_sync.h), from the shape and the
// dtypes the rung runs it at (WorkShape); variants/work_model.h puts a
// step's sites together from a config and its plan. The speed-of-light table
// (bench/measure/roofline/speed_of_light.h) sets each site against the machine's
// ceilings: its floor is the larger of FLOPs over the compute ceiling and
// bytes over the memory bandwidth.
//
// Compulsory bytes: every input the op reads and every output it writes,
// once, at the dtype the rung runs it at; what an implementation moves
// beyond that (a second pass, a spill, a copy ATen makes of a strided view)
// is headroom, not work. A site is counted per occurrence, `count` times per
// optimizer step (a block's sites L times per micro-step, times the
// micro-steps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/trace/op_categories.h"

namespace ladder {

// What bounds a site from below besides memory: the matmul ceiling (GEMMs
// and attention's matmuls, at the step's matmul precision), nothing (the
// memory-bound rest: its FLOPs are counted but no vector ceiling is
// measured), or the interconnect (the ddp rung's collectives: bytes over the
// link, none over memory).
enum class WorkBound { kMatmul, kMemory, kLink };

struct SiteWork {
  std::string name;            // "h.mlp.c_fc/forward", "loss/cross-entropy forward"
  profiler::Category band;     // where the op breakdown counts its time
  WorkBound bound = WorkBound::kMemory;
  int64_t count = 1;           // occurrences per optimizer step
  double flops = 0;            // per occurrence (matmul work; 0 for memory-bound sites)
  double read_bytes = 0;       // per occurrence
  double write_bytes = 0;      // per occurrence
  double bytes() const { return read_bytes + write_bytes; }
};

// The shape and the dtypes a step's ops run at, per micro-step. rows() = B*T
// tokens; act_bytes is the matmuls' operand and output dtype (2 under bf16
// autocast, else 4); the residual stream, LayerNorm's statistics, the loss and
// every parameter, gradient and optimizer state stay fp32 (4 bytes).
struct WorkShape {
  int64_t batch = 0, seq = 0;   // B, T
  int64_t n_embd = 0;           // C
  int64_t n_head = 0;
  int64_t n_layer = 0;          // L
  int64_t vocab = 0;            // V: the classes of the loss
  int64_t model_vocab = 0;      // Vp: wte's rows and the logits' columns (vocab-pad: V rounded up)
  int64_t act_bytes = 4;
  int64_t micro_steps = 1;
  int64_t rows() const { return batch * seq; }
  // Parameters: the block linears' weights and biases, L (12 C^2 + 9 C)
  // (c_attn 3C^2 + 3C, c_proj C^2 + C, c_fc 4C^2 + 4C, mlp.c_proj 4C^2 + C),
  // and wte's Vp C (the lm_head's weight too).
  double block_linear_params() const {
    const double C = double(n_embd);
    return double(n_layer) * (12 * C * C + 9 * C);
  }
  double wte_params() const { return double(model_vocab) * double(n_embd); }
};

// How the rung runs the step's ops (from its plan: variants/work_model.h).
struct WorkFlags {
  bool flash = false;               // SDPA(is_causal), not the explicit (B, nh, T, T) attention
  bool fused_ln = false;            // each residual add + the LayerNorm after it as one op
  bool fused_linear = false;        // the block's linears as fused ops
  bool lt_epilogues = false;        // (CUDA) bias in the forward GEMM, bias gradient in the dW GEMM
  bool gelu_epilogue = false;       // (CUDA) GELU in c_fc's forward GEMM, its derivative in c_proj's dX GEMM
  bool fused_ce = false;            // lm_head + loss as one op, the gradient made in the forward
  bool grads_into_buffers = false;  // the fused ops add dW (and db) into the flat .grad buffer
  bool flat_grads = false;          // every .grad a view of one buffer, zeroed once a step (ddp: its buckets)
  // (CPU, flat buffer) the fused ops' own gradients are not zeroed: each
  // micro-step's first write overwrites them (variants/ops/grad_buffer.h FirstWrites).
  bool first_writes = false;
  // (CPU, flat buffer) the token embedding's backward adds its rows into
  // wte's .grad() (variants/ops/embedding/embedding.h): no dense (Vp, C) gradient.
  bool embedding_into_grad = false;
  bool cast_cache = false;          // the fused ops' bf16 weights cast once per optimizer step
  bool clip_in_kernel = false;      // the clip's scaling inside the fused AdamW kernel
  bool act_ckpt = false;            // each block's forward runs again in backward
  int world = 1;                    // ddp ranks (1: no all-reduce)
  bool zero1 = false;               // AdamW's state sharded over the ranks
  int64_t n_params = 0;             // every parameter (wpe included), counted once (wte is the lm_head)
  // Where the breakdown counts a site can depend on the device: on CUDA by
  // each kernel's name, or by the phase that launched it; on a CPU by the
  // innermost operator, or the range around it (profiler/trace/op_categories.h).
  bool on_cuda = false;
  bool optimizer_in_graph = false;  // (CUDA) the optimizer replays in the step's graph: its kernels go by name
  // A block's forward sites run this many times a micro-step (2 with act-ckpt).
  int64_t block_forwards() const { return act_ckpt ? 2 : 1; }
  // Of the micro-steps' writes into the fused ops' own gradients, the share that
  // reads the buffer first (adds): all, or with first_writes all but the first.
  double accumulating_share(int64_t micro_steps) const {
    return first_writes ? double(micro_steps - 1) / double(micro_steps) : 1.0;
  }
};

// The sites of a step, in step order, each op adding its own.
class WorkList {
 public:
  void add(SiteWork site) { sites_.push_back(std::move(site)); }
  // A memory-bound site: `read` and `written` bytes. Its FLOPs are not
  // counted: no vector ceiling is measured, so its bytes alone set its floor.
  void memory(std::string name, profiler::Category band, int64_t count, double read, double written) {
    add({std::move(name), band, WorkBound::kMemory, count, 0, read, written});
  }
  const std::vector<SiteWork>& sites() const { return sites_; }

 private:
  std::vector<SiteWork> sites_;
};

}  // namespace ladder
