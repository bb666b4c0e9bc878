// tests/bench/test_work_model.cpp: the step's work model (variants/work_model.h),
// site by site, against counts written out here by hand, at two shapes: a
// small one whose width (C 48) is no multiple of 64 and whose classifier is
// vocab-padded (V 100, Vp 128) with two micro-steps, and gpt2-124m at B4 T64
// (V 50257, Vp 50304). Every site of two whole steps is listed in order (the
// fp32 baseline; the CUDA top rung with every fused part and grad-accum),
// then what each other flag changes; and the matmul FLOPs against the MFU
// formula, with the difference the model declares.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "bench/measure/roofline/mfu.h"
#include "variants/work_model.h"

namespace ladder {
namespace {

using profiler::Category;

struct Expect {
  std::string name;
  Category band;
  int64_t count;
  double flops, read, written;
};

struct Dims {
  double B, T, C, nh, L, V, Vp, m;
  double N() const { return B * T; }
  double S() const { return B * nh * T * T; }  // the (B, nh, T, T) scores
};

WorkShape shape_of(const Dims& d, int64_t act_bytes) {
  WorkShape s;
  s.batch = int64_t(d.B);
  s.seq = int64_t(d.T);
  s.n_embd = int64_t(d.C);
  s.n_head = int64_t(d.nh);
  s.n_layer = int64_t(d.L);
  s.vocab = int64_t(d.V);
  s.model_vocab = int64_t(d.Vp);
  s.act_bytes = act_bytes;
  s.micro_steps = int64_t(d.m);
  return s;
}

// Every parameter: wte, wpe (block 1024 rows), per block 12 C^2 + 13 C, ln_f.
double params_of(const Dims& d) {
  return d.Vp * d.C + 1024 * d.C + d.L * (12 * d.C * d.C + 13 * d.C) + 2 * d.C;
}

const Dims kSmall{2, 16, 48, 4, 2, 100, 128, 2};
const Dims kGpt2{4, 64, 768, 12, 12, 50257, 50304, 1};

void expect_sites(const WorkList& work, const std::vector<Expect>& want) {
  const auto& got = work.sites();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(want[i].name);
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].band, want[i].band);
    EXPECT_EQ(got[i].count, want[i].count);
    EXPECT_DOUBLE_EQ(got[i].flops, want[i].flops);
    EXPECT_DOUBLE_EQ(got[i].read_bytes, want[i].read);
    EXPECT_DOUBLE_EQ(got[i].write_bytes, want[i].written);
  }
}

const SiteWork* find_site(const WorkList& work, const std::string& name) {
  for (const auto& s : work.sites())
    if (s.name == name) return &s;
  return nullptr;
}

// The GEMMs (a the operand bytes): forward, then backward as autograd
// reaches the layers, with the rung's options as arguments.
struct GemmOptions {
  double a = 4;
  bool bias_in_gemm = false, gelu_aux = false, into = false, lm_head_into = false;
  int64_t forwards = 1;  // a block's forward runs (2 with act-ckpt)
};

void add_gemms(std::vector<Expect>& e, const Dims& d, const GemmOptions& o) {
  const double N = d.N(), C = d.C, a = o.a;
  struct Linear {
    const char* layer;
    double in, out, per;
    bool bias;
  };
  const Linear layers[] = {{"attn.c_attn", C, 3 * C, d.L, true},
                           {"attn.c_proj", C, C, d.L, true},
                           {"mlp.c_fc", C, 4 * C, d.L, true},
                           {"mlp.c_proj", 4 * C, C, d.L, true},
                           {"lm_head", C, d.Vp, 1, false}};
  for (const auto& l : layers) {
    const double aux = o.gelu_aux && std::string(l.layer) == "mlp.c_fc" ? N * l.out * a : 0;
    const int64_t count = int64_t(l.per * d.m) * (l.bias ? o.forwards : 1);
    e.push_back({std::string(l.layer) + "/forward", Category::kGemm, count, 2 * N * l.in * l.out,
                 N * l.in * a + l.in * l.out * a + (l.bias ? l.out * a : 0), N * l.out * a + aux});
  }
  for (int i = 4; i >= 0; --i) {
    const auto& l = layers[i];
    const bool into = l.bias ? o.into : o.lm_head_into;
    const double g = into ? 4 : a, count = l.per * d.m;
    const double aux = o.gelu_aux && std::string(l.layer) == "mlp.c_proj" ? N * l.in * a : 0;
    e.push_back({std::string(l.layer) + "/input grad", Category::kGemm, int64_t(count), 2 * N * l.in * l.out,
                 N * l.out * a + l.in * l.out * a + aux, N * l.in * a});
    const double bias_read = l.bias && o.bias_in_gemm && into ? l.out * 4 : 0;
    e.push_back({std::string(l.layer) + "/weight grad", Category::kGemm, int64_t(count), 2 * N * l.in * l.out,
                 N * l.out * a + N * l.in * a + (into ? l.in * l.out * 4 : 0) + bias_read,
                 l.in * l.out * g + (l.bias && o.bias_in_gemm ? l.out * g : 0)});
    if (l.bias && !o.bias_in_gemm)
      e.push_back({std::string(l.layer) + "/bias grad", Category::kElementwiseNorm, int64_t(count), 0,
                   N * l.out * a + (into ? l.out * 4 : 0), l.out * g});
  }
}

void add_embeddings(std::vector<Expect>& e, const Dims& d, bool fused_ln) {
  const double N = d.N(), T = d.T, C = d.C;
  const int64_t m = int64_t(d.m);
  e.push_back({"embedding.wte/gather", Category::kElementwiseNorm, m, 0, N * 8 + N * C * 4, N * C * 4});
  e.push_back({"embedding.wpe/gather", Category::kElementwiseNorm, m, 0, T * 8 + T * C * 4, T * C * 4});
  if (!fused_ln) e.push_back({"embedding/add", Category::kElementwiseNorm, m, 0, N * C * 4 + T * C * 4, N * C * 4});
  e.push_back({"embedding.wte/grad", Category::kElementwiseNorm, m, 0, N * C * 4 + N * 8, d.Vp * C * 4});
  e.push_back({"embedding.wpe/grad", Category::kElementwiseNorm, m, 0, N * C * 4, T * C * 4});
}

// The fp32 baseline: explicit attention, nothing fused, one micro-step per
// step (m from the shape), per-parameter AdamW with the clip's own pass.
std::vector<Expect> fp32_baseline(const Dims& d) {
  const double N = d.N(), T = d.T, C = d.C, S = d.S(), H = 4 * C, mm = 2 * N * T * C, P = params_of(d);
  const int64_t m = int64_t(d.m), per = int64_t(d.L * d.m);
  std::vector<Expect> e;
  add_embeddings(e, d, false);
  e.push_back({"attn.q@k^T/forward", Category::kGemm, per, mm, 2 * N * C * 4, S * 4});
  e.push_back({"attn.scale/forward", Category::kElementwiseNorm, per, 0, S * 4, S * 4});
  e.push_back({"attn.mask/forward", Category::kElementwiseNorm, per, 0, S * 4 + T * T, S * 4});
  e.push_back({"attn.softmax/forward", Category::kSoftmaxLoss, per, 0, S * 4, S * 4});
  e.push_back({"attn.att@v/forward", Category::kGemm, per, mm, S * 4 + N * C * 4, N * C * 4});
  e.push_back({"attn.att@v/grad of att", Category::kGemm, per, mm, 2 * N * C * 4, S * 4});
  e.push_back({"attn.att@v/grad of v", Category::kGemm, per, mm, S * 4 + N * C * 4, N * C * 4});
  e.push_back({"attn.softmax/backward", Category::kSoftmaxLoss, per, 0, 2 * S * 4, S * 4});
  e.push_back({"attn.mask/backward", Category::kElementwiseNorm, per, 0, S * 4 + T * T, S * 4});
  e.push_back({"attn.scale/backward", Category::kElementwiseNorm, per, 0, S * 4, S * 4});
  e.push_back({"attn.q@k^T/grad of q", Category::kGemm, per, mm, S * 4 + N * C * 4, N * C * 4});
  e.push_back({"attn.q@k^T/grad of k", Category::kGemm, per, mm, S * 4 + N * C * 4, N * C * 4});
  e.push_back({"attn.output/transpose", Category::kMemcpyMemset, per, 0, N * C * 4, N * C * 4});
  e.push_back({"mlp.gelu/forward", Category::kElementwiseNorm, per, 0, N * H * 4, N * H * 4});
  e.push_back({"mlp.gelu/backward", Category::kElementwiseNorm, per, 0, 2 * N * H * 4, N * H * 4});
  e.push_back({"block/residual add", Category::kElementwiseNorm, 2 * per, 0, N * C * 8, N * C * 4});
  e.push_back({"block/residual grad sum", Category::kElementwiseNorm, 2 * per, 0, 2 * N * C * 4, N * C * 4});
  const int64_t lns = int64_t(2 * d.L + 1) * m;
  e.push_back({"ln/forward", Category::kElementwiseNorm, lns, 0, N * C * 4 + 8 * C, N * C * 4 + 8 * N});
  e.push_back({"ln/backward", Category::kElementwiseNorm, lns, 0, 8 * N * C + 8 * N + 4 * C, 4 * N * C + 8 * C});
  add_gemms(e, d, {});
  const double V = d.V, Vp = d.Vp;
  if (V < Vp) {
    e.push_back({"loss/logits' first V columns", Category::kMemcpyMemset, m, 0, N * V * 4, N * V * 4});
    e.push_back({"loss/gradient padded to Vp", Category::kMemcpyMemset, m, 0, N * V * 4, N * Vp * 4});
  }
  e.push_back({"loss/log_softmax forward", Category::kSoftmaxLoss, m, 0, N * V * 4, N * V * 4});
  e.push_back({"loss/nll forward", Category::kSoftmaxLoss, m, 0, 12 * N, 4});
  e.push_back({"loss/nll backward zeros", Category::kMemcpyMemset, m, 0, 0, N * V * 4});
  e.push_back({"loss/log_softmax backward", Category::kSoftmaxLoss, m, 0, 8 * N * V, 4 * N * V});
  e.push_back({"embedding.wte/tied gradients summed", Category::kElementwiseNorm, m, 0, 8 * Vp * C, 4 * Vp * C});
  if (m > 1)  // from the second micro-step on, autograd adds into the .grad the first left
    e.push_back({"grads/accumulated into .grad", Category::kElementwiseNorm, m - 1, 0, 8 * P, 4 * P});
  e.push_back({"optimizer/grad norm", Category::kOptimizer, 1, 0, 4 * P, 0});
  e.push_back({"optimizer/clip scale", Category::kOptimizer, 1, 0, 4 * P, 4 * P});
  e.push_back({"optimizer/adamw", Category::kOptimizer, 1, 0, 16 * P, 12 * P});
  return e;
}

WorkFlags fp32_flags(const Dims& d) {
  WorkFlags f;
  f.n_params = int64_t(params_of(d));
  return f;
}

// The CUDA top rung: bf16, every fused part with its epilogues, flash,
// flat gradients written in place, the cast cache, fused AdamW with the clip.
WorkFlags cuda_top_flags(const Dims& d) {
  WorkFlags f = fp32_flags(d);
  f.flash = f.fused_ln = f.fused_linear = f.lt_epilogues = f.gelu_epilogue = f.fused_ce = true;
  f.grads_into_buffers = f.flat_grads = f.cast_cache = f.clip_in_kernel = true;
  f.on_cuda = f.optimizer_in_graph = true;  // cuda-graph: the optimizer replays in the step's graph
  return f;
}

std::vector<Expect> cuda_top(const Dims& d) {
  const double N = d.N(), T = d.T, C = d.C, P = params_of(d), a = 2;
  const double causal = N * C * (T + 1), lse = d.B * d.nh * T * 4;
  const int64_t m = int64_t(d.m), per = int64_t(d.L * d.m), L = int64_t(d.L);
  std::vector<Expect> e;
  add_embeddings(e, d, true);
  e.push_back({"attn.sdpa/forward", Category::kAttention, per, 2 * causal, 3 * N * C * a, N * C * a + lse});
  e.push_back({"attn.sdpa/backward", Category::kAttention, per, 5 * causal, 5 * N * C * a + lse, 3 * N * C * a});
  e.push_back({"attn.output/transpose", Category::kMemcpyMemset, per, 0, N * C * a, N * C * a});
  // add_layer_norm: s fp32 and y bf16 out; the first adds pos (T, C); backward dy (bf16), ds, s in.
  const double out = N * C * 4 + N * C * a + 8 * N, params = 8 * C;
  e.push_back({"embedding+ln_1/add_ln forward", Category::kElementwiseNorm, m, 0, N * C * 4 + T * C * 4 + params, out});
  e.push_back({"block/add_ln forward", Category::kElementwiseNorm, 2 * per, 0, N * C * 4 + N * C * a + params, out});
  const double in = N * C * a + N * C * 4 + 8 * N + 4 * C;
  e.push_back({"embedding+ln_1/add_ln backward", Category::kElementwiseNorm, m, 0, in + N * C * 4,
               N * C * 4 + params});
  e.push_back({"block/add_ln backward", Category::kElementwiseNorm, (2 * L - 1) * m, 0, in + N * C * 4,
               N * C * 4 + N * C * a + params});
  e.push_back({"ln_f/add_ln backward", Category::kElementwiseNorm, m, 0, in, N * C * 4 + N * C * a + params});
  add_gemms(e, d, {a, /*bias_in_gemm=*/true, /*gelu_aux=*/true, /*into=*/true, /*lm_head_into=*/true});
  e.push_back({"loss/fused cross-entropy", Category::kSoftmaxLoss, m, 0, N * d.V * a + N * 8, N * d.Vp * a + N * 4});
  const double cached = d.L * (12 * C * C + 9 * C) + d.Vp * C;
  e.push_back({"optimizer/bf16 weight copies", Category::kOptimizer, 1, 0, cached * 4, cached * 2});
  // Autograd hands over every gradient but the block linears' (added in place by their ops).
  const double handed = P - d.L * (12 * C * C + 9 * C);
  e.push_back({"grads/accumulated into .grad", Category::kElementwiseNorm, m, 0, 8 * handed, 4 * handed});
  e.push_back({"optimizer/zero grads", Category::kMemcpyMemset, 1, 0, 0, 4 * P});  // a fill kernel, in the graph
  e.push_back({"optimizer/grad norm", Category::kOptimizer, 1, 0, 4 * P, 0});
  e.push_back({"optimizer/adamw", Category::kOptimizer, 1, 0, 16 * P, 12 * P});
  return e;
}

class WorkModel : public ::testing::TestWithParam<Dims> {};

TEST_P(WorkModel, Fp32BaselineSiteBySite) {
  const Dims& d = GetParam();
  expect_sites(step_work(shape_of(d, 4), fp32_flags(d)), fp32_baseline(d));
}

TEST_P(WorkModel, CudaTopRungSiteBySite) {
  const Dims& d = GetParam();
  expect_sites(step_work(shape_of(d, 2), cuda_top_flags(d)), cuda_top(d));
}

// bf16 with nothing fused: every weight cast each forward and its gradient
// back, LayerNorm outputs cast for the next matmul, softmax and the loss in
// fp32 between casts.
TEST_P(WorkModel, UnfusedBf16CastsEveryForward) {
  const Dims& d = GetParam();
  const double N = d.N(), C = d.C, S = d.S(), V = d.V, Pb = d.L * (12 * C * C + 9 * C), Pw = d.Vp * C;
  const WorkList w = step_work(shape_of(d, 2), fp32_flags(d));
  const int64_t m = int64_t(d.m), per = int64_t(d.L * d.m);
  const std::vector<Expect> casts = {
      {"attn.softmax/cast to fp32", Category::kMemcpyMemset, per, 0, S * 2, S * 4},
      {"attn.softmax/cast to bf16", Category::kMemcpyMemset, per, 0, S * 4, S * 2},
      {"loss/log_softmax forward", Category::kSoftmaxLoss, m, 0, N * V * 2, N * V * 2},
      {"loss/log_softmax backward", Category::kSoftmaxLoss, m, 0, 4 * N * V, 2 * N * V},
      {"cast/block weights to bf16", Category::kMemcpyMemset, m, 0, Pb * 4, Pb * 2},
      {"cast/wte to bf16", Category::kMemcpyMemset, m, 0, Pw * 4, Pw * 2},
      {"cast/block weight grads to fp32", Category::kMemcpyMemset, m, 0, Pb * 2, Pb * 4},
      {"cast/wte grad to fp32", Category::kMemcpyMemset, m, 0, Pw * 2, Pw * 4},
      {"cast/ln output to bf16", Category::kMemcpyMemset, int64_t(2 * d.L + 1) * m, 0, N * C * 4, N * C * 2},
      {"cast/ln output grad to fp32", Category::kMemcpyMemset, int64_t(2 * d.L + 1) * m, 0, N * C * 2, N * C * 4},
  };
  for (const auto& e : casts) {
    SCOPED_TRACE(e.name);
    const SiteWork* s = find_site(w, e.name);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(s->count, e.count);
    EXPECT_DOUBLE_EQ(s->read_bytes, e.read);
    EXPECT_DOUBLE_EQ(s->write_bytes, e.written);
  }
  // The same step in fp32 casts nothing.
  const WorkList fp32 = step_work(shape_of(d, 4), fp32_flags(d));
  for (const auto& s : fp32.sites()) EXPECT_EQ(s.name.find("cast"), std::string::npos) << s.name;
}

// A CPU's fused step with the flat buffer the fused ops add into, in fp32,
// before first writes and the embedding's rows (the tests below turn one on).
WorkFlags cpu_fused_flat_flags(const Dims& d) {
  WorkFlags f = fp32_flags(d);
  f.flash = f.fused_ln = f.fused_linear = f.fused_ce = f.grads_into_buffers = f.flat_grads = true;
  return f;
}

// First writes (a CPU step with the flat buffer, FirstWrites): the fused
// ops' own gradients (the block linears' weights and biases, wte) are not
// zeroed, and the first micro-step's weight gradients read no buffer: of m
// micro-steps' writes into the buffer, m - 1 read it.
TEST_P(WorkModel, FirstWritesZeroOnlyTheOtherGradients) {
  const Dims& d = GetParam();
  WorkFlags f = cpu_fused_flat_flags(d);
  WorkFlags g = f;
  g.first_writes = true;
  const WorkList zeroed = step_work(shape_of(d, 4), f), first = step_work(shape_of(d, 4), g);
  const double C = d.C, N = d.N(), P = params_of(d), Pb = d.L * (12 * C * C + 9 * C), Pw = d.Vp * C;
  const double adds = (d.m - 1) / d.m;
  EXPECT_DOUBLE_EQ(find_site(zeroed, "optimizer/zero grads")->write_bytes, P * 4);
  EXPECT_DOUBLE_EQ(find_site(first, "optimizer/zero grads")->write_bytes, (P - Pb - Pw) * 4);
  const double fc_read = N * 4 * C * 4 + N * C * 4;  // dy (N, 4C), x (N, C)
  EXPECT_DOUBLE_EQ(find_site(zeroed, "mlp.c_fc/weight grad")->read_bytes, fc_read + 4 * C * C * 4);
  EXPECT_DOUBLE_EQ(find_site(first, "mlp.c_fc/weight grad")->read_bytes, fc_read + adds * 4 * C * C * 4);
  EXPECT_DOUBLE_EQ(find_site(first, "lm_head/weight grad")->read_bytes, N * d.Vp * 4 + N * C * 4 + adds * Pw * 4);
  EXPECT_DOUBLE_EQ(find_site(first, "mlp.c_fc/bias grad")->read_bytes, N * 4 * C * 4 + adds * 4 * C * 4);
  EXPECT_DOUBLE_EQ(find_site(first, "mlp.c_fc/weight grad")->write_bytes,
                   find_site(zeroed, "mlp.c_fc/weight grad")->write_bytes);
}

// The embedding's rows into wte's .grad() (a CPU with flat-grads,
// variants/ops/embedding/embedding.h): no dense (Vp, C) gradient, nothing of wte's handed
// to autograd under fused-ce, and without fused-ce no tied sum (the
// lm_head's gradient alone is handed).
TEST_P(WorkModel, EmbeddingRowsIntoGradOnACpu) {
  const Dims& d = GetParam();
  WorkFlags f = cpu_fused_flat_flags(d);
  WorkFlags g = f;
  g.embedding_into_grad = true;
  const WorkList dense = step_work(shape_of(d, 4), f), rows = step_work(shape_of(d, 4), g);
  const double C = d.C, N = d.N(), Pw = d.Vp * C;
  EXPECT_NE(find_site(dense, "embedding.wte/grad"), nullptr);
  EXPECT_EQ(find_site(rows, "embedding.wte/grad"), nullptr);
  const SiteWork* added = find_site(rows, "embedding.wte/grad rows added");
  ASSERT_NE(added, nullptr);
  EXPECT_EQ(added->count, int64_t(d.m));
  EXPECT_DOUBLE_EQ(added->read_bytes, 2 * N * C * 4 + N * 8);
  EXPECT_DOUBLE_EQ(added->write_bytes, N * C * 4);
  const SiteWork *handed_dense = find_site(dense, "grads/accumulated into .grad"),
                 *handed_rows = find_site(rows, "grads/accumulated into .grad");
  EXPECT_DOUBLE_EQ(handed_dense->read_bytes - handed_rows->read_bytes, 8 * Pw);
  EXPECT_DOUBLE_EQ(handed_dense->write_bytes - handed_rows->write_bytes, 4 * Pw);
  f.fused_ce = g.fused_ce = false;
  EXPECT_NE(find_site(step_work(shape_of(d, 4), f), "embedding.wte/tied gradients summed"), nullptr);
  const WorkList unfused_ce = step_work(shape_of(d, 4), g);
  EXPECT_EQ(find_site(unfused_ce, "embedding.wte/tied gradients summed"), nullptr);
  EXPECT_DOUBLE_EQ(find_site(unfused_ce, "grads/accumulated into .grad")->read_bytes, handed_dense->read_bytes);
}

// act-ckpt runs each block's forward twice; ddp adds the ring's bytes over
// the link; zero1 shards AdamW's work over the ranks.
TEST_P(WorkModel, CheckpointDdpAndZero1) {
  const Dims& d = GetParam();
  WorkFlags f = fp32_flags(d);
  f.act_ckpt = true;
  f.world = 4;
  f.zero1 = true;
  const WorkList w = step_work(shape_of(d, 4), f);
  const int64_t per = int64_t(d.L * d.m), P = f.n_params;
  EXPECT_EQ(find_site(w, "attn.q@k^T/forward")->count, 2 * per);
  EXPECT_EQ(find_site(w, "attn.q@k^T/grad of q")->count, per);
  EXPECT_EQ(find_site(w, "mlp.c_fc/forward")->count, 2 * per);
  EXPECT_EQ(find_site(w, "mlp.c_fc/weight grad")->count, per);
  EXPECT_EQ(find_site(w, "lm_head/forward")->count, int64_t(d.m));
  EXPECT_EQ(find_site(w, "ln/forward")->count, int64_t(4 * d.L + 1) * int64_t(d.m));
  EXPECT_EQ(find_site(w, "ln/backward")->count, int64_t(2 * d.L + 1) * int64_t(d.m));
  const SiteWork* ring = find_site(w, "ddp/reduce-scatter + all-gather");
  ASSERT_NE(ring, nullptr);
  EXPECT_EQ(ring->bound, WorkBound::kLink);
  EXPECT_EQ(ring->band, Category::kCommunication);
  EXPECT_DOUBLE_EQ(ring->bytes(), 2.0 * 3 / 4 * double(P) * 4);
  EXPECT_DOUBLE_EQ(find_site(w, "optimizer/adamw")->read_bytes, 16.0 * double(P) / 4);
  // The ddp rung's gradients stay in its buckets: added into every micro-step, zeroed once.
  EXPECT_EQ(find_site(w, "grads/accumulated into .grad")->count, int64_t(d.m));
  EXPECT_NE(find_site(w, "optimizer/zero grads"), nullptr);
  f.world = 1;
  EXPECT_EQ(find_site(step_work(shape_of(d, 4), f), "ddp/reduce-scatter + all-gather"), nullptr);
}

// Where the breakdown counts a site: CUDA's masked_fill kernel is named like
// a fill (memcpy/memset); in a graph replay the optimizer phase's scale and
// zeroing kernels go by their names (elementwise, memcpy/memset).
TEST_P(WorkModel, BandsFollowTheBreakdownOnCuda) {
  const Dims& d = GetParam();
  WorkFlags f = fp32_flags(d);
  f.flat_grads = true;
  const WorkList cpu = step_work(shape_of(d, 4), f);
  EXPECT_EQ(find_site(cpu, "attn.mask/forward")->band, Category::kElementwiseNorm);
  EXPECT_EQ(find_site(cpu, "optimizer/clip scale")->band, Category::kOptimizer);
  EXPECT_EQ(find_site(cpu, "optimizer/zero grads")->band, Category::kOptimizer);
  f.on_cuda = true;
  const WorkList cuda = step_work(shape_of(d, 4), f);
  EXPECT_EQ(find_site(cuda, "attn.mask/forward")->band, Category::kMemcpyMemset);
  EXPECT_EQ(find_site(cuda, "attn.mask/backward")->band, Category::kMemcpyMemset);
  EXPECT_EQ(find_site(cuda, "optimizer/clip scale")->band, Category::kOptimizer);
  f.optimizer_in_graph = true;
  const WorkList graphed = step_work(shape_of(d, 4), f);
  EXPECT_EQ(find_site(graphed, "optimizer/clip scale")->band, Category::kElementwiseNorm);
  EXPECT_EQ(find_site(graphed, "optimizer/zero grads")->band, Category::kMemcpyMemset);
  EXPECT_EQ(find_site(graphed, "optimizer/adamw")->band, Category::kOptimizer);
}

// The matmul FLOPs against the MFU formula's flops_per_step: what the formula
// counts beyond them is the declared difference, to the FLOP.
TEST_P(WorkModel, MatmulFlopsAgainstTheMfuFormula) {
  const Dims& d = GetParam();
  ModelConfig model;
  model.n_layer = int64_t(d.L);
  model.n_head = int64_t(d.nh);
  model.n_embd = int64_t(d.C);
  const double formula_per_token =
      double(flops_per_token(model, gpt2_params_without_wpe(model, int64_t(d.Vp)), int64_t(d.T)));
  const double tokens = d.N() * d.m;
  for (bool flash : {false, true})
    for (bool ckpt : {false, true}) {
      WorkFlags f = fp32_flags(d);
      f.flash = flash;
      f.act_ckpt = ckpt;
      const WorkShape s = shape_of(d, 4);
      SCOPED_TRACE(testing::Message() << "flash " << flash << " act-ckpt " << ckpt);
      EXPECT_DOUBLE_EQ(formula_per_token * tokens - matmul_flops(step_work(s, f)), mfu_formula_excess_flops(s, f));
    }
  // Explicit attention without recompute: the formula's attention term is exactly the model's; the
  // difference is the non-matmul parameters' 6 FLOPs a token.
  EXPECT_DOUBLE_EQ(mfu_formula_excess_flops(shape_of(d, 4), fp32_flags(d)), 6 * (13 * d.C * d.L + 2 * d.C) * tokens);
}

INSTANTIATE_TEST_SUITE_P(TwoShapes, WorkModel, ::testing::Values(kSmall, kGpt2),
                         [](const testing::TestParamInfo<Dims>& info) {
                           return info.param.C == 768 ? std::string("Gpt2B4T64") : std::string("C48VocabPadded");
                         });

}  // namespace
}  // namespace ladder
