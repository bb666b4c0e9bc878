// tests/test_fused_linear.cpp: linear_bias, mlp_gelu and classifier_cross_entropy (variants/fused_linear.h)
// against their at::linear / at::gelu references: forward values and every
// gradient, in fp32 and under bf16 autocast, on CPU here and on CUDA (the
// cuBLASLt epilogues) where a GPU is present; their input checks and counts;
// and GPT's fused forward against the unfused one.
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/expect_close.h"
#include "variants/fused_linear.h"
#include "variants/grad_buffer.h"
#include "variants/model.h"
#include "variants/precision.h"

namespace ladder::fused {
namespace {

// The unfused model with flash attention: what the fused paths are checked against.
ModelOptions flash_only() {
  ModelOptions o;
  o.flash = true;
  return o;
}

using ladder::testing::expect_close;
using ladder::testing::expect_error_mentions;


// The output and the gradients of every input, from a random upstream gradient.
struct Result {
  std::vector<torch::Tensor> values;  // y, then d(input) for each input in order
};

using Op = std::function<torch::Tensor(const std::vector<torch::Tensor>&)>;

// inputs: the shapes of x and then the parameters; scales: the std of each.
Result run(const Op& op, const std::vector<std::vector<int64_t>>& shapes, const std::vector<double>& scales,
           torch::Device device, bool autocast) {
  torch::manual_seed(11);
  std::vector<torch::Tensor> inputs;
  for (size_t i = 0; i < shapes.size(); ++i)
    inputs.push_back((scales[i] * torch::randn(shapes[i])).to(device).requires_grad_());
  torch::Tensor y;
  {
    const AutocastScope scope(autocast, device);  // the step's own bf16 autocast
    y = op(inputs);
  }
  auto dy = torch::randn(y.sizes()).to(device).to(y.scalar_type());
  y.backward(dy);
  Result r;
  r.values.push_back(y.detach());
  for (auto& t : inputs) r.values.push_back(t.grad());
  return r;
}

const std::vector<std::string> kLinearNames = {"y", "dx", "dweight", "dbias"};
const std::vector<std::string> kMlpNames = {"y", "dx", "dfc_weight", "dfc_bias", "dproj_weight", "dproj_bias"};

void expect_match(const Result& fused, const Result& ref, const std::vector<std::string>& names, double rtol,
                  double atol) {
  ASSERT_EQ(fused.values.size(), names.size());
  for (size_t i = 0; i < names.size(); ++i) expect_close(fused.values[i], ref.values[i], rtol, atol, names[i]);
}

// x (B, T, I) -> (B, T, O).
void check_linear(torch::Device device, bool autocast, double rtol, double atol) {
  const int64_t B = 3, T = 5, I = 24, O = 40;
  const std::vector<std::vector<int64_t>> shapes = {{B, T, I}, {O, I}, {O}};
  const std::vector<double> scales = {1.0, 0.2, 0.1};
  auto fused = run([](auto& in) { return linear_bias(in[0], in[1], in[2]); }, shapes, scales, device, autocast);
  auto ref =
      run([](auto& in) { return linear_bias_reference(in[0], in[1], in[2]); }, shapes, scales, device, autocast);
  expect_match(fused, ref, kLinearNames, rtol, atol);
}

// x (B, T, C) -> (B, T, C) through a hidden width H = 4C.
void check_mlp(torch::Device device, bool autocast, double rtol, double atol) {
  const int64_t B = 2, T = 7, C = 16, H = 64;
  const std::vector<std::vector<int64_t>> shapes = {{B, T, C}, {H, C}, {H}, {C, H}, {C}};
  const std::vector<double> scales = {1.0, 0.3, 0.5, 0.2, 0.1};
  auto fused = run([](auto& in) { return mlp_gelu(in[0], in[1], in[2], in[3], in[4]); }, shapes, scales, device,
                   autocast);
  auto ref = run([](auto& in) { return mlp_gelu_reference(in[0], in[1], in[2], in[3], in[4]); }, shapes, scales,
                 device, autocast);
  expect_match(fused, ref, kMlpNames, rtol, atol);
}

// x (B, T, C) and a padded lm_head weight (Vp, C) -> the mean loss over the
// first V classes; run()'s random upstream gradient of the loss checks that
// backward scales by it.
const std::vector<std::string> kClassifierNames = {"loss", "dx", "dweight"};
void check_classifier(torch::Device device, bool autocast, double rtol, double atol) {
  const int64_t B = 3, T = 5, C = 16, Vp = 48, V = 37;
  torch::manual_seed(12);
  const auto targets = torch::randint(0, V, {B, T}, torch::kLong).to(device);
  const std::vector<std::vector<int64_t>> shapes = {{B, T, C}, {Vp, C}};
  const std::vector<double> scales = {1.0, 0.5};
  auto fused = run([&](auto& in) { return classifier_cross_entropy(in[0], in[1], targets, V); }, shapes, scales,
                   device, autocast);
  auto ref = run([&](auto& in) { return classifier_cross_entropy_reference(in[0], in[1], targets, V); }, shapes,
                 scales, device, autocast);
  expect_match(fused, ref, kClassifierNames, rtol, atol);
  EXPECT_EQ(fused.values[0].scalar_type(), torch::kFloat);  // the loss, in fp32 under autocast too
  // The padding rows of the weight are no class: their gradient is exactly 0.
  const auto padding = fused.values[2].narrow(0, V, Vp - V);
  EXPECT_TRUE(torch::equal(padding, torch::zeros_like(padding)));
}

TEST(FusedClassifier, Float32MatchesReference) { check_classifier(torch::kCPU, false, 1e-5, 1e-6); }
TEST(FusedClassifier, Bf16AutocastMatchesReference) { check_classifier(torch::kCPU, true, 2e-2, 2e-2); }

TEST(FusedClassifier, IsOneAutogradNodeThatCountsItsCalls) {
  const auto before = fused_linear_stats();
  auto x = torch::randn({6, 8}).requires_grad_(), w = torch::randn({20, 8}).requires_grad_();
  auto loss = classifier_cross_entropy(x, w, torch::randint(0, 20, {6}, torch::kLong), 20);
  ASSERT_NE(loss.grad_fn(), nullptr);
  EXPECT_NE(loss.grad_fn()->name().find("ClassifierCrossEntropyFunction"), std::string::npos)
      << loss.grad_fn()->name();
  EXPECT_EQ(loss.grad_fn()->next_edges().size(), 3u);  // x, weight, and the targets, which take none
  EXPECT_EQ(fused_linear_stats().classifier_calls - before.classifier_calls, 1);
}

TEST(FusedClassifier, RejectsInputsThatDoNotFit) {
  auto x = torch::randn({6, 8});
  const auto t = torch::randint(0, 20, {6}, torch::kLong);
  expect_error_mentions([&] { classifier_cross_entropy(x, torch::randn({20, 9}), t, 20); },
                        "expected x (..., C) and weight (Vp, C)");
  expect_error_mentions([&] { classifier_cross_entropy(x, torch::randn({20, 8}), t.narrow(0, 0, 5), 20); },
                        "expected one target per row of x");
  expect_error_mentions([&] { classifier_cross_entropy(x, torch::randn({20, 8}), t, 21); },
                        "valid_vocab = 21 is outside [1, Vp = 20]");
  expect_error_mentions([&] { classifier_cross_entropy(x, torch::randn({20, 8}), t + 20, 20); },
                        "is outside [0, valid_vocab = 20)");
}

// weight_grad(s)_into_buffer(s): with .grad() already a tensor, every op
// adds each weight's gradient into it in place (hooks on the weight never
// see a gradient: autograd got none), and the bias gradients go through
// autograd as before; without a .grad() the gradient goes through autograd.
// The sums equal the plain path's, under bf16 autocast too.
void check_weight_grads_into_buffers(bool autocast) {
  SCOPED_TRACE(autocast ? "bf16 autocast" : "fp32");
  const int64_t N = 6, C = 8, H = 32, Vp = 20, V = 17;
  torch::manual_seed(21);
  auto x = torch::randn({N, C});
  auto w = 0.3 * torch::randn({H, C}), b = 0.1 * torch::randn({H});
  auto w2 = 0.3 * torch::randn({C, H}), b2 = 0.1 * torch::randn({C});
  auto wte = 0.3 * torch::randn({Vp, C});
  const auto targets = torch::randint(0, V, {N}, torch::kLong);
  // Every weight and bias gradient of one loss through all three ops.
  auto grads = [&](bool into, bool preset) {
    std::vector<torch::Tensor> params;
    for (auto* t : {&w, &b, &w2, &b2, &wte}) params.push_back(t->clone().requires_grad_());
    int hooked = 0;
    for (size_t i : {0u, 2u, 4u}) {
      if (preset) params[i].mutable_grad() = torch::full_like(params[i], 0.5);  // a buffer with something in it
      // Counts the gradients autograd hands the weight (an undefined one is none).
      params[i].register_hook([&hooked](const torch::Tensor& g) { hooked += g.defined() ? 1 : 0; });
    }
    torch::Tensor loss;
    {
      const AutocastScope scope(autocast, torch::kCPU);
      const LinearOptions options{/*weight_grads_into_buffers=*/into};
      auto h = linear_bias(x, params[0], params[1], options);                                    // (N, H)
      auto y = mlp_gelu(x, params[0], params[1], params[2], params[3], options);                 // (N, C)
      loss = classifier_cross_entropy(y + h.narrow(1, 0, C).to(y.scalar_type()), params[4], targets, V, into);
    }
    loss.backward();
    std::vector<torch::Tensor> out;
    for (auto& p : params) out.push_back(p.grad());
    return std::make_pair(out, hooked);
  };
  auto [plain, plain_hooked] = grads(/*into=*/false, /*preset=*/true);
  auto [into, into_hooked] = grads(/*into=*/true, /*preset=*/true);
  auto [unset, unset_hooked] = grads(/*into=*/true, /*preset=*/false);
  EXPECT_EQ(plain_hooked, 3);  // w (its linear's and MLP's gradients summed first), w2, wte
  EXPECT_EQ(into_hooked, 0) << "a weight whose gradient went into its buffer still got one from autograd";
  EXPECT_EQ(unset_hooked, 3) << "without a .grad() the gradient must go through autograd";
  const char* names[] = {"w", "b", "w2", "b2", "wte"};
  for (size_t i = 0; i < plain.size(); ++i) {
    EXPECT_EQ(into[i].scalar_type(), torch::kFloat) << names[i];
    expect_close(into[i], plain[i], 1e-5, 1e-6, std::string("preset buffer: ") + names[i]);
    const auto preset = (i % 2 == 0) ? torch::full_like(plain[i], 0.5) : torch::zeros_like(plain[i]);
    expect_close(unset[i] + preset, plain[i], 1e-5, 1e-6, std::string("no buffer: ") + names[i]);
  }
}

TEST(FusedLinear, WeightGradsGoIntoExistingBuffers) { check_weight_grads_into_buffers(false); }
TEST(FusedLinear, WeightGradsGoIntoExistingBuffersUnderBf16Autocast) { check_weight_grads_into_buffers(true); }

TEST(FusedLinear, Float32MatchesReference) { check_linear(torch::kCPU, false, 1e-5, 1e-6); }
TEST(FusedLinear, Bf16AutocastMatchesReference) { check_linear(torch::kCPU, true, 2e-2, 2e-2); }
TEST(FusedMlpGelu, Float32MatchesReference) { check_mlp(torch::kCPU, false, 1e-5, 1e-6); }
TEST(FusedMlpGelu, Bf16AutocastMatchesReference) { check_mlp(torch::kCPU, true, 2e-2, 2e-2); }

TEST(FusedMlpGelu, Bf16AutocastComputesInBf16AndReturnsFloat32ParameterGradients) {
  auto r = run([](auto& in) { return mlp_gelu(in[0], in[1], in[2], in[3], in[4]); },
               {{4, 8}, {32, 8}, {32}, {8, 32}, {8}}, {1, 1, 1, 1, 1}, torch::kCPU, true);
  EXPECT_EQ(r.values[0].scalar_type(), torch::kBFloat16);  // as autocast's linear
  for (size_t i = 1; i < r.values.size(); ++i) EXPECT_EQ(r.values[i].scalar_type(), torch::kFloat) << kMlpNames[i];
}

TEST(FusedMlpGelu, IsOneAutogradNode) {
  auto x = torch::randn({6, 8}).requires_grad_();
  auto fc_w = torch::randn({32, 8}).requires_grad_(), fc_b = torch::randn({32}).requires_grad_();
  auto pr_w = torch::randn({8, 32}).requires_grad_(), pr_b = torch::randn({8}).requires_grad_();
  auto y = mlp_gelu(x, fc_w, fc_b, pr_w, pr_b);
  // One autograd node for the whole MLP (behind the view back to (..., C)),
  // whose inputs are x and the four parameters directly.
  ASSERT_NE(y.grad_fn(), nullptr);
  ASSERT_EQ(y.grad_fn()->name(), "ViewBackward0");
  const auto& node = y.grad_fn()->next_edges().at(0).function;
  ASSERT_NE(node, nullptr);
  EXPECT_NE(node->name().find("MlpGeluFunction"), std::string::npos) << node->name();
  EXPECT_EQ(node->num_inputs(), 1u);
  EXPECT_EQ(node->next_edges().size(), 5u);
}

TEST(FusedLinear, CountsCallsAndNoCudaGemmsOnCpu) {
  const auto before = fused_linear_stats();
  auto x = torch::randn({2, 3, 8});
  linear_bias(x, torch::randn({4, 8}), torch::randn({4}));
  mlp_gelu(x, torch::randn({16, 8}), torch::randn({16}), torch::randn({8, 16}), torch::randn({8}));
  const auto after = fused_linear_stats();
  EXPECT_EQ(after.linear_bias_calls - before.linear_bias_calls, 1);
  EXPECT_EQ(after.mlp_gelu_calls - before.mlp_gelu_calls, 1);
  EXPECT_EQ(after.epilogue_gemms, before.epilogue_gemms);  // cuBLASLt runs only on CUDA
  EXPECT_EQ(after.fallback_gemms, before.fallback_gemms);
}


TEST(FusedLinear, RejectsShapesThatDoNotFit) {
  auto x = torch::randn({2, 8});
  expect_error_mentions([&] { linear_bias(x, torch::randn({4, 9}), torch::randn({4})); }, "expected x (..., I)");
  expect_error_mentions([&] { linear_bias(x, torch::randn({4, 8}), torch::randn({5})); }, "bias [5]");
  expect_error_mentions(
      [&] { mlp_gelu(x, torch::randn({16, 8}), torch::randn({16}), torch::randn({8, 15}), torch::randn({8})); },
      "does not take c_fc's 16 outputs");
  expect_error_mentions(
      [&] { mlp_gelu(x, torch::randn({16, 8}), torch::randn({16}), torch::randn({8, 16}), torch::randn({7})); },
      "c_proj bias [7]");
}

// GPT's fused path (fused linears, MLP and add+LayerNorm) against the plain
// one, fp32, same weights: logits and every parameter's gradient.
TEST(FusedLinear, GptFusedForwardAndBackwardMatchUnfused) {
  ModelConfig cfg{/*n_layer=*/2, /*n_head=*/2, /*n_embd=*/32, /*block_size=*/16, /*vocab_size=*/64};
  std::vector<std::vector<torch::Tensor>> grads(2);
  std::vector<torch::Tensor> logits(2);
  for (int fused = 0; fused < 2; ++fused) {
    GPT model(cfg, fused == 1 ? ModelOptions::all_fused(/*flash=*/true, /*weight_grads_into_buffers=*/false)
                              : flash_only());
    init_gpt2_weights(model, 5);
    torch::manual_seed(3);
    auto idx = torch::randint(0, cfg.vocab_size, {2, 16});
    auto out = model->forward(idx);  // (2, 16, V)
    logits[fused] = out.detach().clone();
    lm_loss(out, torch::randint(0, cfg.vocab_size, {2, 16})).backward();
    for (auto& p : model->parameters()) grads[fused].push_back(p.grad());
  }
  expect_close(logits[1].detach(), logits[0].detach(), 1e-5, 1e-5, "logits");
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i)
    expect_close(grads[1][i], grads[0][i], 1e-4, 1e-6, "gradient of parameter " + std::to_string(i));
}

// GPT's training loss (GPT::loss): the fused path's classifier, with a padded
// vocabulary, against lm_loss on the plain path's logits; fp32, same weights.
// The fused model runs as the step runs it: weight gradients added into a
// flat gradient buffer.
TEST(FusedClassifier, GptFusedLossAndGradientsMatchUnfused) {
  ModelConfig cfg{/*n_layer=*/2, /*n_head=*/2, /*n_embd=*/32, /*block_size=*/16, /*vocab_size=*/64};
  const int64_t V = 57;  // the first 57 of 64 rows are classes
  std::vector<std::vector<torch::Tensor>> grads(2);
  std::vector<float> losses(2);
  for (int fused = 0; fused < 2; ++fused) {
    GPT model(cfg, fused == 1 ? ModelOptions::all_fused(/*flash=*/true, /*weight_grads_into_buffers=*/true)
                              : flash_only());
    init_gpt2_weights(model, 5, V);
    std::unique_ptr<FlatGradients> flat;
    if (fused == 1) flat = std::make_unique<FlatGradients>(model->parameters());
    torch::manual_seed(3);
    auto idx = torch::randint(0, V, {2, 16}), targets = torch::randint(0, V, {2, 16});
    auto loss = model->loss(idx, targets, V);
    loss.backward();
    losses[fused] = loss.item<float>();
    for (auto& p : model->parameters()) grads[fused].push_back(p.grad());
  }
  EXPECT_NEAR(losses[1], losses[0], 1e-5 * std::abs(losses[0]));
  ASSERT_EQ(grads[0].size(), grads[1].size());
  for (size_t i = 0; i < grads[0].size(); ++i)
    expect_close(grads[1][i], grads[0][i], 1e-4, 1e-6, "gradient of parameter " + std::to_string(i));
}

// Counts aten::_to_copy calls (what a dtype cast dispatches to) whose input
// has one given shape, across every thread, while installed.
class ShapeCastCounter {
 public:
  explicit ShapeCastCounter(std::vector<int64_t> shape) {
    shape_ = std::move(shape);
    casts_ = 0;
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&on_start).needsInputs(true));
  }
  ~ShapeCastCounter() { at::removeCallback(handle_); }
  ShapeCastCounter(const ShapeCastCounter&) = delete;
  ShapeCastCounter& operator=(const ShapeCastCounter&) = delete;
  int64_t casts() const { return casts_.load(); }

 private:
  static std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
    if (std::string_view(fn.name()) != "aten::_to_copy") return nullptr;
    const auto inputs = fn.inputs();
    if (!inputs.empty() && inputs[0].isTensor() && inputs[0].toTensor().sizes() == torch::IntArrayRef(shape_))
      casts_.fetch_add(1);
    return nullptr;
  }
  static inline std::vector<int64_t> shape_;
  static inline std::atomic<int64_t> casts_{0};
  at::CallbackHandle handle_;
};

// Under bf16 autocast the fused path's LayerNorms hand bf16 to the next
// matmul, so no (B, T, C) activation is cast, forward or backward; the
// unfused path casts every LayerNorm output to bf16 (and its gradient back).
// Both compute the same loss within bf16's precision.
TEST(FusedLinear, GptFusedUnderBf16AutocastCastsNoActivations) {
  ModelConfig cfg{/*n_layer=*/2, /*n_head=*/2, /*n_embd=*/32, /*block_size=*/16, /*vocab_size=*/64};
  const int64_t B = 2, T = 16;
  std::vector<int64_t> casts(2);
  std::vector<float> losses(2);
  for (int fused = 0; fused < 2; ++fused) {
    GPT model(cfg, fused == 1 ? ModelOptions::all_fused(/*flash=*/true, /*weight_grads_into_buffers=*/false)
                              : flash_only());
    init_gpt2_weights(model, 5);
    torch::manual_seed(3);
    auto idx = torch::randint(0, cfg.vocab_size, {B, T});
    auto targets = torch::randint(0, cfg.vocab_size, {B, T});
    const ShapeCastCounter counter({B, T, cfg.n_embd});
    torch::Tensor loss;
    {
      const AutocastScope autocast(true, torch::kCPU);
      loss = model->loss(idx, targets);  // the step's own path: the fused one ends in the classifier
    }
    loss.backward();
    casts[fused] = counter.casts();
    losses[fused] = loss.item<float>();
  }
  EXPECT_GT(casts[0], 0) << "the unfused path should cast its LayerNorm outputs (is the counter working?)";
  EXPECT_EQ(casts[1], 0) << "the fused path cast " << casts[1] << " (B, T, C) activations";
  EXPECT_NEAR(losses[1], losses[0], 2e-2 * std::abs(losses[0]));
}

// ---- CUDA: the cuBLASLt epilogues themselves -------------------------------------------

void expect_epilogues_ran(const FusedLinearStats& before) {
  const auto after = fused_linear_stats();
  EXPECT_GT(after.epilogue_gemms, before.epilogue_gemms) << "no cuBLASLt epilogue GEMM ran";
  EXPECT_EQ(after.fallback_gemms, before.fallback_gemms) << "fell back: " << after.last_fallback;
}

// fp32 must match whichever way it runs: cuBLASLt need not have an fp32
// kernel for every epilogue (then the op falls back to ATen, counted). The
// bf16 half, the precision the fused rung computes in, must run the
// epilogues and never fall back.
TEST(FusedLinear, CudaMatchesReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  check_linear(torch::kCUDA, false, 1e-4, 1e-4);  // TF32 may be on: ATen's reference follows the same setting
  const auto before = fused_linear_stats();
  check_linear(torch::kCUDA, true, 2e-2, 2e-2);
  expect_epilogues_ran(before);
}

TEST(FusedMlpGelu, CudaMatchesReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  check_mlp(torch::kCUDA, false, 1e-4, 1e-4);  // as FusedLinear.CudaMatchesReference
  const auto before = fused_linear_stats();
  check_mlp(torch::kCUDA, true, 3e-2, 3e-2);
  expect_epilogues_ran(before);
}

TEST(FusedClassifier, CudaMatchesReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  check_classifier(torch::kCUDA, false, 1e-4, 1e-4);
  check_classifier(torch::kCUDA, true, 2e-2, 2e-2);
}

TEST(FusedMlpGelu, CudaGpt2ShapesUseEpilogues) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // GPT-2 124M's MLP at B4 T256: the shapes the fused rung runs.
  const auto before = fused_linear_stats();
  auto r = run([](auto& in) { return mlp_gelu(in[0], in[1], in[2], in[3], in[4]); },
               {{4, 256, 768}, {3072, 768}, {3072}, {768, 3072}, {768}}, {1, 0.02, 0.02, 0.02, 0.02},
               torch::kCUDA, true);
  auto ref = run([](auto& in) { return mlp_gelu_reference(in[0], in[1], in[2], in[3], in[4]); },
                 {{4, 256, 768}, {3072, 768}, {3072}, {768, 3072}, {768}}, {1, 0.02, 0.02, 0.02, 0.02},
                 torch::kCUDA, true);
  expect_match(r, ref, kMlpNames, 3e-2, 3e-2);
  expect_epilogues_ran(before);
}

}  // namespace
}  // namespace ladder::fused
