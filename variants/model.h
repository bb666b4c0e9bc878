// variants/model.h: GPT-2 in LibTorch, as in nanoGPT / build-nanogpt.
//
// Token + position embeddings, n_layer pre-LN blocks (causal self-attention
// with c_attn of 3C and c_proj; MLP of 4C with tanh-GELU), a final LayerNorm,
// and an lm_head weight-tied to wte (logits = x @ wte^T, so the tied weight is
// one parameter). GPT-2 biases, no dropout. Parameter names match nanoGPT's
// state dict without the "transformer." prefix, e.g. "h.0.attn.c_attn.weight".
#pragma once

#include <torch/torch.h>

#include "variants/config.h"

namespace ladder {

class CausalSelfAttentionImpl : public torch::nn::Module {
 public:
  explicit CausalSelfAttentionImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_attn{nullptr};  // C -> 3C
  torch::nn::Linear c_proj{nullptr};  // C -> C, a residual projection

 private:
  int64_t n_head_;
  int64_t n_embd_;
  torch::Tensor causal_mask_;  // (block, block) bool, true where attention is allowed
};
TORCH_MODULE(CausalSelfAttention);

class MLPImpl : public torch::nn::Module {
 public:
  explicit MLPImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::Linear c_fc{nullptr};    // C -> 4C
  torch::nn::Linear c_proj{nullptr};  // 4C -> C, a residual projection
};
TORCH_MODULE(MLP);

class BlockImpl : public torch::nn::Module {
 public:
  explicit BlockImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, C) -> (B, T, C)

  torch::nn::LayerNorm ln_1{nullptr};
  CausalSelfAttention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  MLP mlp{nullptr};
};
TORCH_MODULE(Block);

class GPTImpl : public torch::nn::Module {
 public:
  explicit GPTImpl(const ModelConfig& cfg);
  torch::Tensor forward(const torch::Tensor& idx);  // (B, T) int64 -> logits (B, T, V)

  // Parameters counted once (lm_head is wte). With exclude_position_embeddings
  // this is the N of the MFU formula (nanoGPT's get_num_params default).
  int64_t num_params(bool exclude_position_embeddings = false) const;
  const ModelConfig& config() const { return cfg_; }

  torch::nn::Embedding wte{nullptr};  // (V, C), also the lm_head weight
  torch::nn::Embedding wpe{nullptr};  // (block, C)
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  ModelConfig cfg_;
};
TORCH_MODULE(GPT);

// GPT-2 initialisation: every Linear and Embedding weight ~ N(0, 0.02), the
// residual projections (attn.c_proj, mlp.c_proj) scaled by 1/sqrt(2 n_layer),
// biases zero, LayerNorm (1, 0). Deterministic in `seed`; draws on the CPU
// generator in parameter order so any device gets identical weights.
void init_gpt2_weights(GPT& model, uint64_t seed);

// Mean cross-entropy over all B*T positions.
torch::Tensor lm_loss(const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace ladder
