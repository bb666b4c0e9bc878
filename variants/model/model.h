// variants/model/model.h: GPT-2 in LibTorch, as in nanoGPT / build-nanogpt.
//
// Token + position embeddings, n_layer pre-LN blocks (causal self-attention
// with c_attn of 3C and c_proj; MLP of 4C with tanh-GELU), a final LayerNorm,
// and an lm_head weight-tied to wte (logits = x @ wte^T, so the tied weight is
// one parameter). GPT-2 biases, no dropout. Parameter names match nanoGPT's
// state dict without the "transformer." prefix, e.g. "h.0.attn.c_attn.weight".
#pragma once

#include <torch/torch.h>

#include "variants/ops/attention/attention.h"
#include "variants/fused_linear/fused_linear.h"

#include "variants/config/config.h"
#include "variants/ops/work.h"

namespace ladder {

// What the rung's switches change in the model (set by the switches' apply,
// variants/switches/; StepPlan::model).
struct ModelOptions {
  bool flash = false;         // flash: scaled_dot_product_attention(is_causal), not explicit attention
  AttentionCall attention_call = AttentionCall::kSdpa;  // flash's: how its attention plan's choice is called
  bool fused_ln = false;      // fused-ln: each residual add + the LayerNorm after it as one op
  bool fused_linear = false;  // fused-linear: c_attn, c_proj as fused::linear_bias, the MLP as fused::mlp_gelu
  bool fused_ce = false;      // fused-ce: lm_head + loss as one node (fused::classifier_cross_entropy)
  // How the fused linears and the classifier run: their cuBLASLt epilogues
  // (lt-epilogues, gelu-epilogue) and, with flat-grads, weight gradients
  // added straight into the weights' existing .grad() (the step's flat
  // buffer) instead of handed to autograd (fused_linear.h). Only for the
  // step that owns .grad() and hooks nothing on it: not with ddp's hooks.
  fused::LinearOptions linear;
  bool layer_ranges = false;  // "layer <i>" ranges in forward and backward (profiler/ranges/layer_ranges.h)
  // act-ckpt: each block's forward runs without autograd, keeping only its
  // inputs, and again in its backward to rebuild what backward needs.
  bool checkpoint_blocks = false;

  // Every fused op on, with every epilogue, as the fused rung runs them
  // (for tests and micro-benchmarks that build a model without a step).
  static ModelOptions all_fused(bool flash, bool grads_into_buffers);
};

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  // options.fused_linear: c_attn and c_proj as fused::linear_bias (variants/fused_linear/fused_linear.h).
  CausalSelfAttentionImpl(const ModelConfig& cfg, const ModelOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_attn{nullptr};  // C -> 3C
  torch::nn::Linear c_proj{nullptr};  // C -> C, a residual projection

 private:
  int64_t n_head_;
  int64_t n_embd_;
  ModelOptions options_;
  torch::Tensor causal_mask_;  // (block, block) bool, true where attention is allowed
};
TORCH_MODULE(CausalSelfAttention);

class MLPImpl : public torch::nn::Module {
 public:
  // options.fused_linear: the whole MLP as fused::mlp_gelu (GEMM epilogues, variants/fused_linear/fused_linear.h).
  explicit MLPImpl(const ModelConfig& cfg, const ModelOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_fc{nullptr};    // C -> 4C
  torch::nn::Linear c_proj{nullptr};  // 4C -> C, a residual projection

 private:
  ModelOptions options_;
};
TORCH_MODULE(MLP);

class BlockImpl : public torch::nn::Module {
 public:
  BlockImpl(const ModelConfig& cfg, const ModelOptions& options = {});
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::LayerNorm ln_1{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

class GPTImpl : public torch::nn::Module {
 public:
  explicit GPTImpl(const ModelConfig& cfg, ModelOptions options = {});
  torch::Tensor forward(const torch::Tensor& idx);  // (B, T) int64 -> logits (B, T, V)
  // The training loss: mean cross-entropy of the logits' first valid_vocab
  // columns (0 = all) against targets (B, T). Unfused: lm_loss(forward(idx)).
  // fused_ce: the lm_head and the loss as one node (fused::classifier_cross_entropy),
  // whose forward already makes the logits' gradient; the logits are never
  // returned.
  torch::Tensor loss(const torch::Tensor& idx, const torch::Tensor& targets, int64_t valid_vocab = 0);
  // (B, T) int64 -> the final LayerNorm's output (B, T, C), the lm_head's input.
  torch::Tensor hidden(const torch::Tensor& idx);
  const ModelOptions& options() const { return options_; }
  // The parameters the fused ops cast to the compute dtype in their forward
  // (what options.linear.casts can hold): every block's linears' weights and
  // biases with fused_linear, wte (the lm_head) with fused_ce.
  std::vector<torch::Tensor> fused_cast_parameters();
  // Block i's forward on the residual stream: (x) -> (x'), or with fused_ln
  // (x, x's LayerNorm) -> (x', x''s LayerNorm for the next block, or ln_f's).
  // Public for the checkpoint's recompute (model.cpp).
  std::vector<torch::Tensor> block_forward(int64_t i, const std::vector<torch::Tensor>& in);

  // Parameters counted once (lm_head is wte). With exclude_position_embeddings
  // this is the N of the MFU formula (nanoGPT's get_num_params default).
  int64_t num_params(bool exclude_position_embeddings = false) const;
  const ModelConfig& config() const { return cfg_; }

  torch::nn::Embedding wte{nullptr};  // (V, C), also the lm_head weight
  torch::nn::Embedding wpe{nullptr};  // (block, C)
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  // wte(idx) (B, T, C); with flat-grads on a CPU by fused::token_embedding,
  // whose backward adds its rows into wte's .grad() in place.
  torch::Tensor token_embeddings(const torch::Tensor& idx);
  // fused_ln: every residual add is fused with the LayerNorm after it,
  // from the embeddings' sum (with block 0's ln_1) to the last one (ln_f).
  // Under bf16 autocast each LayerNorm hands bf16 to the next matmul.
  // tok (B, T, C), pos (T, C) -> (B, T, C) after ln_f.
  torch::Tensor forward_fused(const torch::Tensor& tok, const torch::Tensor& pos);
  // block_forward, checkpointed with options_.checkpoint_blocks.
  std::vector<torch::Tensor> run_block(int64_t i, const std::vector<torch::Tensor>& in);

  ModelConfig cfg_;
  ModelOptions options_;
};
TORCH_MODULE(GPT);

// GPT-2 initialisation: every Linear and Embedding weight ~ N(0, 0.02), the
// residual projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer),
// biases zero, LayerNorm (1, 0). Deterministic in `seed`; draws on the CPU
// generator in parameter order so any device gets identical weights. With a
// padded vocabulary, wte's first `valid_vocab` rows are drawn in place and the
// padding rows last, so every real weight equals the unpadded model's.
void init_gpt2_weights(GPT& model, uint64_t seed, int64_t valid_vocab = 0);

// Blocks recomputed in backward by activation checkpointing in this process.
int64_t block_recomputes();

// The model's own sites in a step's work (variants/ops/work.h), forward and
// backward: the token and position embeddings (gathers, and wte's dense
// gradient of (Vp, C)); attention, explicit (its two matmuls each way in the
// GEMM band, the score matrix's scale, mask and softmax; under bf16 autocast
// the softmax in fp32 between two casts) or SDPA's causal kernel (the
// T(T+1)/2 pairs a causal kernel computes: two matmuls forward, five
// backward with the recompute of the scores); the attention output's
// transpose into (B, T, C); GELU where no GEMM epilogue does it; the
// residual adds and, in backward, the sum of the two gradients at each fork
// of the residual stream, where no fused LayerNorm does them.
void add_model_work(const WorkShape& shape, const WorkFlags& flags, WorkList& work);

// Mean cross-entropy over all B*T positions. Only the first `valid_vocab`
// logits are classes (0 = all): padding never enters the softmax.
torch::Tensor lm_loss(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab = 0);

// The scaled_dot_product_attention backend LibTorch picks for the model's
// attention shapes: "flash", "efficient", "cudnn", "math" or "overrideable".
std::string sdpa_backend(const RunConfig& cfg, const torch::Device& device);

}  // namespace ladder
