// variants/model/model.cpp: GPT-2 forward and initialisation (see model.h).
#include "variants/model/model.h"

#include <atomic>
#include <cmath>
#include <optional>

#include <ATen/autocast_mode.h>

#include "profiler/ranges/layer_ranges.h"
#include "profiler/ranges/range.h"
#include "variants/ops/add_layer_norm/add_layer_norm.h"
#include "variants/planners/attention_candidates.h"
#include "variants/ops/embedding/embedding.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/config/precision.h"

namespace ladder {

namespace F = torch::nn::functional;

namespace {
// y = x W^T + b through ATen's at::linear, not torch::nn::Linear::forward.
// LibTorch's C++ functional (torch/nn/functional/linear.h) computes a 3-D
// input as matmul followed by a separate broadcast `+= bias`, and autograd
// then reduces the bias gradient in a kernel of its own. at::linear folds the
// (B, T) dims into one addmm whose bias rides the GEMM epilogue, as PyTorch's
// nn.Linear does. On the first H100 run the separate bias adds were 12 % of
// the top rung's kernel time (about 6 ms of its 50 ms step).
torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  return at::linear(x, layer->weight, layer->bias);
}
}  // namespace

ModelOptions ModelOptions::all_fused(bool flash, bool grads_into_buffers) {
  ModelOptions o;
  o.flash = flash;
  o.fused_ln = o.fused_linear = o.fused_ce = true;
  o.linear.grads_into_buffers = grads_into_buffers;  // every epilogue on (the defaults), no plan
  return o;
}

CausalSelfAttentionImpl::CausalSelfAttentionImpl(const ModelConfig& cfg, const ModelOptions& options)
    : n_head_(cfg.n_head), n_embd_(cfg.n_embd), options_(options) {
  c_attn = register_module("c_attn", torch::nn::Linear(cfg.n_embd, 3 * cfg.n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(cfg.n_embd, cfg.n_embd));
  causal_mask_ = register_buffer(
      "causal_mask", torch::ones({cfg.block_size, cfg.block_size}, torch::kBool).tril());
}

torch::Tensor CausalSelfAttentionImpl::forward(const torch::Tensor& x) {
  const int64_t B = x.size(0), T = x.size(1), C = x.size(2);
  const int64_t hs = C / n_head_;
  // `site`: the layer's name in the GEMM plan (variants/planners/gemm_sites.h).
  auto project = [this](const torch::nn::Linear& layer, const torch::Tensor& in, const char* site) {
    return options_.fused_linear ? fused::linear_bias(in, layer->weight, layer->bias, options_.linear, site)
                                 : linear(layer, in);
  };
  auto qkv = project(c_attn, x, "attn.c_attn").split(n_embd_, /*dim=*/2);  // 3 x (B, T, C)
  auto q = qkv[0].view({B, T, n_head_, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto k = qkv[1].view({B, T, n_head_, hs}).transpose(1, 2);  // (B, nh, T, hs)
  auto v = qkv[2].view({B, T, n_head_, hs}).transpose(1, 2);  // (B, nh, T, hs)
  torch::Tensor y;
  {
    profiler::ScopedRange range(profiler::names::kAttention);
    y = options_.flash ? causal_attention(options_.attention_call, q, k, v, causal_mask_)  // (B, nh, T, hs)
                       : explicit_causal_attention(q, k, v, causal_mask_);                // (B, nh, T, hs)
  }
  y = y.transpose(1, 2).contiguous().view({B, T, C});  // (B, T, C)
  return project(c_proj, y, "attn.c_proj");
}

MLPImpl::MLPImpl(const ModelConfig& cfg, const ModelOptions& options) : options_(options) {
  c_fc = register_module("c_fc", torch::nn::Linear(cfg.n_embd, 4 * cfg.n_embd));
  c_proj = register_module("c_proj", torch::nn::Linear(4 * cfg.n_embd, cfg.n_embd));
}

torch::Tensor MLPImpl::forward(const torch::Tensor& x) {
  if (options_.fused_linear)
    return fused::mlp_gelu(x, c_fc->weight, c_fc->bias, c_proj->weight, c_proj->bias, options_.linear);  // (B, T, C)
  auto h = linear(c_fc, x);                                 // (B, T, 4C)
  h = F::gelu(h, F::GELUFuncOptions().approximate("tanh"));  // GPT-2's tanh GELU
  return linear(c_proj, h);                                 // (B, T, C)
}

BlockImpl::BlockImpl(const ModelConfig& cfg, const ModelOptions& options) {
  ln_1 = register_module("ln_1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.n_embd})));
  attn = register_module("attn", CausalSelfAttention(cfg, options));
  ln_2 = register_module("ln_2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.n_embd})));
  mlp = register_module("mlp", MLP(cfg, options));
}

torch::Tensor BlockImpl::forward(const torch::Tensor& x) {
  auto y = x + attn(ln_1(x));  // (B, T, C)
  return y + mlp(ln_2(y));     // (B, T, C)
}

namespace {

std::atomic<int64_t> g_block_recomputes{0};

// Activation checkpointing of one block, as torch.utils.checkpoint with
// use_reentrant=True: forward runs the block without autograd and keeps only
// its inputs; backward runs it again, with autograd and under the forward's
// autocast, and backpropagates through that run: the block's parameters get
// their gradients there (into the same .grad, the flat buffer's views, the
// ddp rung's hooks), its inputs theirs, returned here.
struct CheckpointedBlock : torch::autograd::Function<CheckpointedBlock> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, GPTImpl* model,
                                                int64_t layer, at::TensorList in) {
    ctx->saved_data["model"] = reinterpret_cast<int64_t>(model);  // the model outlives its graph
    ctx->saved_data["layer"] = layer;
    ctx->saved_data["autocast"] = at::autocast::is_autocast_enabled(in[0].device().type());
    ctx->save_for_backward(in.vec());
    torch::NoGradGuard no_grad;
    return model->block_forward(layer, in.vec());
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    auto* model = reinterpret_cast<GPTImpl*>(ctx->saved_data["model"].toInt());
    std::vector<torch::Tensor> inputs;
    for (const auto& t : ctx->get_saved_variables()) inputs.push_back(t.detach().requires_grad_(t.requires_grad()));
    std::vector<torch::Tensor> outputs;
    {
      torch::AutoGradMode grad_mode(true);
      AutocastScope autocast(ctx->saved_data["autocast"].toBool(), inputs[0].device());
      outputs = model->block_forward(ctx->saved_data["layer"].toInt(), inputs);
    }
    ++g_block_recomputes;
    std::vector<torch::Tensor> used, used_grads;  // an output nothing read gets no gradient
    for (size_t k = 0; k < outputs.size(); ++k)
      if (grads[k].defined() && outputs[k].requires_grad()) {
        used.push_back(outputs[k]);
        used_grads.push_back(grads[k]);
      }
    torch::autograd::backward(used, used_grads);
    torch::autograd::variable_list out = {torch::Tensor(), torch::Tensor()};  // model, layer
    for (const auto& in : inputs) out.push_back(in.requires_grad() ? in.grad() : torch::Tensor());
    return out;
  }
};

}  // namespace

int64_t block_recomputes() { return g_block_recomputes.load(); }

GPTImpl::GPTImpl(const ModelConfig& cfg, ModelOptions options) : cfg_(cfg), options_(options) {
  wte = register_module("wte", torch::nn::Embedding(cfg.vocab_size, cfg.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(cfg.block_size, cfg.n_embd));
  h = register_module("h", torch::nn::ModuleList());
  for (int64_t i = 0; i < cfg.n_layer; ++i)
    h->push_back(Block(cfg, options));
  ln_f = register_module("ln_f", torch::nn::LayerNorm(torch::nn::LayerNormOptions({cfg.n_embd})));
}

torch::Tensor GPTImpl::forward(const torch::Tensor& idx) {
  return torch::matmul(hidden(idx), wte->weight.t());  // (B, T, V), lm_head tied to wte
}

torch::Tensor GPTImpl::loss(const torch::Tensor& idx, const torch::Tensor& targets, int64_t valid_vocab) {
  if (!options_.fused_ce) return lm_loss(forward(idx), targets, valid_vocab);
  const int64_t V = valid_vocab > 0 ? valid_vocab : wte->weight.size(0);
  return fused::classifier_cross_entropy(hidden(idx), wte->weight, targets, V, options_.linear);
}

std::vector<torch::Tensor> GPTImpl::fused_cast_parameters() {
  std::vector<torch::Tensor> params;
  if (options_.fused_linear) {
    for (const auto& block : *h) {
      const auto* b = block->as<Block>();
      for (const auto& layer : {b->attn->c_attn, b->attn->c_proj, b->mlp->c_fc, b->mlp->c_proj}) {
        params.push_back(layer->weight);
        params.push_back(layer->bias);
      }
    }
  }
  if (options_.fused_ce) params.push_back(wte->weight);
  return params;
}

torch::Tensor GPTImpl::token_embeddings(const torch::Tensor& idx) {
  // flat-grads on a CPU: the backward adds its rows into wte's .grad() (variants/ops/embedding/embedding.h).
  if (options_.linear.grads_into_buffers && idx.is_cpu())
    return fused::token_embedding(idx, wte->weight, /*into_buffer=*/true);  // (B, T, C)
  return wte(idx);  // (B, T, C)
}

torch::Tensor GPTImpl::hidden(const torch::Tensor& idx) {
  const int64_t T = idx.size(1);
  TORCH_CHECK(T <= cfg_.block_size, "sequence length ", T, " exceeds block size ", cfg_.block_size);
  auto pos = torch::arange(T, idx.options());  // (T)
  torch::Tensor x;
  if (options_.fused_ln) {
    x = forward_fused(token_embeddings(idx), wpe(pos));  // (B, T, C)
  } else {
    x = token_embeddings(idx) + wpe(pos);  // (B, T, C)
    const int64_t L = int64_t(h->size());
    const bool ranges = options_.layer_ranges;
    // Backward: the boundary below block 0 closes its range (layer_ranges.h).
    if (ranges) x = profiler::layer_boundary({x}, /*close_layer=*/0, /*open_layer=*/-1)[0];
    for (int64_t i = 0; i < L; ++i) {
      {
        std::optional<profiler::ScopedRange> range;
        if (ranges) range.emplace(profiler::names::layer(i));
        x = run_block(i, {x})[0];  // (B, T, C)
      }
      // Backward: closes layer i+1's range, opens layer i's.
      if (ranges) x = profiler::layer_boundary({x}, i + 1 < L ? i + 1 : -1, i)[0];
    }
    x = ln_f(x);  // (B, T, C)
  }
  return x;
}

namespace {
// What the LayerNorms hand on: bf16 under bf16 autocast, the dtype autocast
// would cast the next matmul's input to anyway, so the cast kernels (and
// their backward) vanish; fp32 otherwise. The residual stream stays fp32.
at::ScalarType normed_dtype(c10::DeviceType device_type) {
  return at::autocast::is_autocast_enabled(device_type) &&
                 at::autocast::get_autocast_dtype(device_type) == at::kBFloat16
             ? at::kBFloat16
             : at::kFloat;
}

// s = x + residual, and its LayerNorm by `ln`, in one op (fused::add_layer_norm).
std::tuple<torch::Tensor, torch::Tensor> add_norm(const torch::Tensor& x, const torch::Tensor& residual,
                                                  const torch::nn::LayerNorm& ln) {
  return fused::add_layer_norm(x, residual, ln->weight, ln->bias, ln->options.eps(),
                               normed_dtype(x.device().type()));
}
}  // namespace

torch::Tensor GPTImpl::forward_fused(const torch::Tensor& tok, const torch::Tensor& pos) {
  const int64_t L = int64_t(h->size());
  // x = tok + pos; block 0's ln_1. The position embeddings broadcast over the
  // batch (expand's backward sums their gradient over it).
  // (Not a structured binding: the lambda below captures both, which C++17 forbids.)
  torch::Tensor x, normed;  // (B, T, C) each
  std::tie(x, normed) = add_norm(tok, pos.expand_as(tok), h[0]->as<Block>()->ln_1);
  const bool ranges = options_.layer_ranges;
  // Both streams cross each block boundary: the residual x and its LayerNorm.
  auto boundary = [&](int64_t close_layer, int64_t open_layer) {
    auto xs = profiler::layer_boundary({x, normed}, close_layer, open_layer);
    x = xs[0];
    normed = xs[1];
  };
  if (ranges) boundary(/*close_layer=*/0, /*open_layer=*/-1);
  for (int64_t i = 0; i < L; ++i) {
    {
      std::optional<profiler::ScopedRange> range;
      if (ranges) range.emplace(profiler::names::layer(i));
      const auto out = run_block(i, {x, normed});
      x = out[0];
      normed = out[1];
    }
    if (ranges) boundary(i + 1 < L ? i + 1 : -1, i);
  }
  return normed;  // ln_f(x): (B, T, C)
}

std::vector<torch::Tensor> GPTImpl::block_forward(int64_t i, const std::vector<torch::Tensor>& in) {
  auto* blk = h[i]->as<Block>();
  if (!options_.fused_ln) return {blk->forward(in[0])};  // (B, T, C)
  torch::Tensor x, normed;
  std::tie(x, normed) = add_norm(in[0], blk->attn(in[1]), blk->ln_2);  // x += attn; ln_2
  const auto& next = i + 1 < int64_t(h->size()) ? h[i + 1]->as<Block>()->ln_1 : ln_f;
  std::tie(x, normed) = add_norm(x, blk->mlp(normed), next);  // x += mlp; the next LayerNorm
  return {x, normed};
}

std::vector<torch::Tensor> GPTImpl::run_block(int64_t i, const std::vector<torch::Tensor>& in) {
  if (!options_.checkpoint_blocks || !torch::GradMode::is_enabled()) return block_forward(i, in);
  return CheckpointedBlock::apply(this, i, at::TensorList(in));
}

int64_t GPTImpl::num_params(bool exclude_position_embeddings) const {
  int64_t n = 0;
  for (const auto& p : parameters()) n += p.numel();
  if (exclude_position_embeddings) n -= wpe->weight.numel();
  return n;
}

void init_gpt2_weights(GPT& model, uint64_t seed, int64_t valid_vocab) {
  torch::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  const double std_base = 0.02;
  const double std_residual = 0.02 / std::sqrt(2.0 * double(model->config().n_layer));
  // Draw on the CPU in a fixed order, then copy, so CPU and CUDA runs agree.
  auto fill_normal = [&](torch::Tensor& t, double std) {
    auto cpu = torch::empty(t.sizes(), torch::dtype(torch::kFloat32));
    cpu.normal_(0.0, std, gen);
    t.copy_(cpu);
  };
  torch::Tensor padding_rows;  // drawn after everything else
  for (auto& item : model->named_parameters()) {
    const std::string& name = item.key();
    auto p = item.value();
    if (name == "wte.weight" && valid_vocab > 0 && valid_vocab < p.size(0)) {
      padding_rows = p.slice(0, valid_vocab);
      p = p.slice(0, 0, valid_vocab);
    }
    const bool is_bias = name.size() >= 5 && name.compare(name.size() - 5, 5, ".bias") == 0;
    const bool is_ln = name.find("ln_") != std::string::npos;
    if (is_ln) {
      is_bias ? p.zero_() : p.fill_(1.0);
    } else if (is_bias) {
      p.zero_();
    } else {
      const bool residual = name.find(".c_proj.weight") != std::string::npos;
      fill_normal(p, residual ? std_residual : std_base);
    }
  }
  if (padding_rows.defined()) fill_normal(padding_rows, std_base);
}

namespace {

using profiler::Category;

void add_embedding_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  const double N = double(s.rows()), T = double(s.seq), C = double(s.n_embd), Vp = double(s.model_vocab);
  const int64_t m = s.micro_steps;
  work.memory("embedding.wte/gather", Category::kElementwiseNorm, m, N * 8 + N * C * 4, N * C * 4);
  work.memory("embedding.wpe/gather", Category::kElementwiseNorm, m, T * 8 + T * C * 4, T * C * 4);
  if (!f.fused_ln)  // tok + pos (the fused op adds them with block 0's ln_1)
    work.memory("embedding/add", Category::kElementwiseNorm, m, N * C * 4 + T * C * 4, N * C * 4);
  if (f.embedding_into_grad)  // the rows added into .grad() in place: each token's row read and written
    work.memory("embedding.wte/grad rows added", Category::kElementwiseNorm, m, 2 * N * C * 4 + N * 8, N * C * 4);
  else  // wte's gradient as ATen makes it: dense (Vp, C), zeros then the rows' sums.
    work.memory("embedding.wte/grad", Category::kElementwiseNorm, m, N * C * 4 + N * 8, Vp * C * 4);
  work.memory("embedding.wpe/grad", Category::kElementwiseNorm, m, N * C * 4, T * C * 4);
}

// Explicit attention over the full (B, nh, T, T) scores S: q k^T, the scale,
// the mask, softmax, att v; backward the same in reverse, two GEMMs a matmul.
void add_explicit_attention_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  const double a = double(s.act_bytes), N = double(s.rows()), T = double(s.seq), C = double(s.n_embd);
  const double S = double(s.batch) * double(s.n_head) * T * T, mm = 2 * N * T * C;  // mm: one matmul's FLOPs
  const int64_t per = s.n_layer * s.micro_steps, fwd = per * f.block_forwards();
  const bool bf16 = a == 2;
  auto gemm = [&](const char* name, int64_t count, double read, double written) {
    work.add({name, Category::kGemm, WorkBound::kMatmul, count, mm, read, written});
  };
  gemm("attn.q@k^T/forward", fwd, 2 * N * C * a, S * a);
  work.memory("attn.scale/forward", Category::kElementwiseNorm, fwd, S * a, S * a);
  // masked_fill: elementwise work, but CUDA's kernel (masked_fill_kernel) is named like a fill, which the
  // breakdown counts as memcpy/memset; on a CPU the operator aten::masked_fill is elementwise.
  const Category mask = f.on_cuda ? Category::kMemcpyMemset : Category::kElementwiseNorm;
  work.memory("attn.mask/forward", mask, fwd, S * a + T * T, S * a);
  if (bf16) work.memory("attn.softmax/cast to fp32", Category::kMemcpyMemset, fwd, S * 2, S * 4);
  work.memory("attn.softmax/forward", Category::kSoftmaxLoss, fwd, S * 4, S * 4);
  if (bf16) work.memory("attn.softmax/cast to bf16", Category::kMemcpyMemset, fwd, S * 4, S * 2);
  gemm("attn.att@v/forward", fwd, S * a + N * C * a, N * C * a);
  gemm("attn.att@v/grad of att", per, 2 * N * C * a, S * a);
  gemm("attn.att@v/grad of v", per, S * a + N * C * a, N * C * a);
  if (bf16) work.memory("attn.softmax/cast back to fp32", Category::kMemcpyMemset, per, S * 2, S * 4);
  work.memory("attn.softmax/backward", Category::kSoftmaxLoss, per, 2 * S * 4, S * 4);
  if (bf16) work.memory("attn.softmax/cast back to bf16", Category::kMemcpyMemset, per, S * 4, S * 2);
  work.memory("attn.mask/backward", mask, per, S * a + T * T, S * a);
  work.memory("attn.scale/backward", Category::kElementwiseNorm, per, S * a, S * a);
  gemm("attn.q@k^T/grad of q", per, S * a + N * C * a, N * C * a);
  gemm("attn.q@k^T/grad of k", per, S * a + N * C * a, N * C * a);
}

// SDPA with is_causal: a causal kernel computes the T(T+1)/2 pairs of each
// head, 2 hs FLOPs a pair a matmul; two matmuls forward (q k^T, p v), five
// backward (the scores again, dv, dp, dq, dk). It reads q, k, v and writes
// the output and the rows' logsumexp (fp32); backward reads those and dout,
// and writes dq, dk, dv.
void add_sdpa_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  const double a = double(s.act_bytes), N = double(s.rows()), T = double(s.seq), C = double(s.n_embd);
  const double pairs_matmul = N * C * (T + 1);  // 2 hs B nh T(T+1)/2: one causal matmul's FLOPs
  const double lse = double(s.batch) * double(s.n_head) * T * 4;
  const int64_t per = s.n_layer * s.micro_steps;
  work.add({"attn.sdpa/forward", Category::kAttention, WorkBound::kMatmul, per * f.block_forwards(),
            2 * pairs_matmul, 3 * N * C * a, N * C * a + lse});
  work.add({"attn.sdpa/backward", Category::kAttention, WorkBound::kMatmul, per, 5 * pairs_matmul,
            5 * N * C * a + lse, 3 * N * C * a});
}

void add_block_elementwise_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  const double a = double(s.act_bytes), N = double(s.rows()), C = double(s.n_embd), H = 4 * C;
  const int64_t per = s.n_layer * s.micro_steps, fwd = per * f.block_forwards();
  // y (B, nh, T, hs) -> (B, T, C) for c_proj: a copy of the attention's output.
  work.memory("attn.output/transpose", Category::kMemcpyMemset, fwd, N * C * a, N * C * a);
  if (!(f.fused_linear && f.gelu_epilogue)) {
    work.memory("mlp.gelu/forward", Category::kElementwiseNorm, fwd, N * H * a, N * H * a);
    work.memory("mlp.gelu/backward", Category::kElementwiseNorm, per, 2 * N * H * a, N * H * a);
  }
  if (!f.fused_ln) {  // x + attn(...), x + mlp(...): fp32 stream plus the branch at the matmul dtype
    work.memory("block/residual add", Category::kElementwiseNorm, 2 * fwd, N * C * (4 + a), N * C * 4);
    work.memory("block/residual grad sum", Category::kElementwiseNorm, 2 * per, 2 * N * C * 4, N * C * 4);
  }
}

}  // namespace

void add_model_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  add_embedding_work(s, f, work);
  if (f.flash) add_sdpa_work(s, f, work);
  else add_explicit_attention_work(s, f, work);
  add_block_elementwise_work(s, f, work);
}

torch::Tensor lm_loss(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab) {
  const int64_t Vp = logits.size(-1);
  const int64_t V = valid_vocab > 0 ? valid_vocab : Vp;
  auto classes = V < Vp ? logits.narrow(-1, 0, V) : logits;                // (B, T, V)
  return F::cross_entropy(classes.reshape({-1, V}), targets.reshape({-1}));  // mean over B*T
}

std::string sdpa_backend(const RunConfig& cfg, const torch::Device& device) {
  AttentionPlanKey shape;
  shape.batch = cfg.batch;
  shape.n_head = cfg.model.n_head;
  shape.seq = cfg.seq;
  shape.head_size = cfg.model.n_embd / cfg.model.n_head;
  return attention::sdpa_pick(shape, device, cfg.bf16_applied() ? torch::kBFloat16 : torch::kFloat32);
}

}  // namespace ladder
