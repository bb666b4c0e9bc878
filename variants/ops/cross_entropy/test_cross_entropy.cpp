// variants/ops/cross_entropy/test_cross_entropy.cpp: the classifier's one-pass loss,
// cross_entropy_loss_and_grad_over_logits (variants/ops/cross_entropy/cross_entropy.h), against
// cross_entropy_reference and autograd's gradient of it: the loss, the
// gradient it writes over the logits on the valid columns, exactly 0 on the
// padding columns; fp32 and bf16 logits, padded vocabularies, odd sizes and
// extreme logits; its input checks; on CUDA (16-byte packs and not) where a
// GPU is present. GPT-2's own widths are in tests/variants/test_fused_widths.cpp, the
// classifier around it (lm_head GEMM + this loss) in variants/fused_linear/test_fused_linear.cpp.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/expect_close.h"
#include "variants/ops/cross_entropy/cross_entropy.h"

namespace ladder::fused {
namespace {

using ladder::testing::expect_close;
using ladder::testing::expect_error_mentions;
using ladder::testing::SettingRestorer;

struct CrossEntropyResult {
  torch::Tensor loss;  // () float32
  torch::Tensor grad;  // (N, Vp) d(loss)/d(logits), in the logits' dtype
};

// The op under test, on a copy of the logits: its loss, and the gradient it
// wrote over that copy.
CrossEntropyResult run_fused(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab) {
  auto grad = logits.clone(at::MemoryFormat::Contiguous);  // (N, Vp), becomes the gradient
  auto loss = cross_entropy_loss_and_grad_over_logits(grad, targets, valid_vocab);
  return {loss, grad};
}

// The reference's loss and autograd's gradient of it w.r.t. the logits.
CrossEntropyResult run_reference(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab) {
  auto leaf = logits.clone().requires_grad_();  // (N, Vp)
  auto loss = cross_entropy_reference(leaf, targets, valid_vocab);
  loss.backward();
  return {loss.detach(), leaf.grad()};
}

// Logits (N, Vp) with the padding columns set high: were they to enter the
// softmax, the loss would change a lot.
torch::Tensor make_logits(int64_t N, int64_t Vp, int64_t V, torch::ScalarType dtype, double scale = 2.0) {
  auto logits = scale * torch::randn({N, Vp});
  if (Vp > V) logits.narrow(1, V, Vp - V).fill_(30.0);
  return logits.to(dtype);
}

// The loss within loss_tol; the gradient over the valid columns within
// grad_rtol (atol relative to the gradient's O(1 / N) scale); exactly 0 over
// the padding columns.
void expect_matches(const CrossEntropyResult& fused, const CrossEntropyResult& ref, int64_t V, double loss_tol,
                    double grad_rtol) {
  const int64_t N = ref.grad.size(0), Vp = ref.grad.size(1);
  EXPECT_EQ(fused.loss.scalar_type(), torch::kFloat);
  EXPECT_EQ(fused.loss.dim(), 0);
  expect_close(fused.loss.cpu(), ref.loss.cpu(), loss_tol, loss_tol, "loss");
  expect_close(fused.grad.narrow(1, 0, V).cpu(), ref.grad.narrow(1, 0, V).cpu(), grad_rtol,
               grad_rtol / double(N), "dlogits over the valid columns");
  if (Vp > V) {
    const auto padding = fused.grad.narrow(1, V, Vp - V).cpu();
    EXPECT_TRUE(torch::equal(padding, torch::zeros_like(padding))) << "padding columns got a nonzero gradient";
  }
}

void expect_cross_entropy_matches(int64_t N, int64_t Vp, int64_t V, torch::ScalarType dtype, double loss_tol,
                                  double grad_rtol, double scale = 2.0) {
  SCOPED_TRACE(::testing::Message() << "N " << N << ", Vp " << Vp << ", V " << V << ", logits " << dtype
                                    << ", logit scale " << scale);
  torch::manual_seed(11);
  const auto logits = make_logits(N, Vp, V, dtype, scale);
  const auto targets = torch::randint(0, V, {N}, torch::kLong);
  expect_matches(run_fused(logits, targets, V), run_reference(logits, targets, V), V, loss_tol, grad_rtol);
}

TEST(FusedCrossEntropy, Float32MatchesReference) {
  expect_cross_entropy_matches(64, 500, 500, torch::kFloat, 1e-5, 1e-5);
  expect_cross_entropy_matches(16, 300, 300, torch::kFloat, 1e-5, 1e-5);
}

TEST(FusedCrossEntropy, Bf16LogitsMatchReference) {
  // Both sides read the same bf16 values exactly, so the loss stays tight;
  // the gradient is rounded to bf16 on both sides (one ulp is 2^-8 relative).
  expect_cross_entropy_matches(32, 400, 400, torch::kBFloat16, 1e-5, 1e-2);
}

TEST(FusedCrossEntropy, PaddedVocabMatchesAndPaddingGetsZeroGradient) {
  expect_cross_entropy_matches(24, 253 + 47, 253, torch::kFloat, 1e-5, 1e-5);
  expect_cross_entropy_matches(24, 253 + 47, 253, torch::kBFloat16, 1e-5, 1e-2);
}

TEST(FusedCrossEntropy, OddSizesMatchReference) {
  expect_cross_entropy_matches(1, 13, 13, torch::kFloat, 1e-5, 1e-5);  // one row, V below one lane block
  expect_cross_entropy_matches(3, 37, 29, torch::kFloat, 1e-5, 1e-5);
  expect_cross_entropy_matches(5, 8, 1, torch::kFloat, 1e-5, 1e-5);    // one class: loss 0, gradient 0
}

TEST(FusedCrossEntropy, ExtremeLogitsMatchReference) {
  // Spreads of hundreds (exp underflows), and -inf logits off the target.
  expect_cross_entropy_matches(8, 200, 200, torch::kFloat, 1e-5, 1e-5, /*scale=*/100.0);
  torch::manual_seed(5);
  auto logits = torch::randn({6, 50});
  const auto targets = torch::randint(0, 25, {6}, torch::kLong);
  logits.narrow(1, 25, 10).fill_(-std::numeric_limits<float>::infinity());
  const auto fused = run_fused(logits, targets, 50);
  const auto ref = run_reference(logits, targets, 50);
  ASSERT_TRUE(std::isfinite(fused.loss.item<float>()));
  expect_close(fused.loss, ref.loss, 1e-5, 1e-5, "loss with -inf logits");
  expect_close(fused.grad, ref.grad, 1e-5, 1e-6, "dlogits with -inf logits");
}

// The gradient is written over the logits' own memory (llm.c's fused
// classifier): no second (N, Vp) tensor.
void expect_gradient_over_the_logits(torch::Device device, torch::ScalarType dtype, double grad_rtol) {
  SCOPED_TRACE(::testing::Message() << "logits " << dtype << " on " << device);
  torch::manual_seed(5);
  const int64_t N = 24, V = 253, Vp = 300;
  const auto values = make_logits(N, Vp, V, dtype).to(device);
  const auto targets = torch::randint(0, V, {N}, torch::kLong).to(device);
  auto logits = values.clone();
  const void* logits_memory = logits.data_ptr();
  const auto loss = cross_entropy_loss_and_grad_over_logits(logits, targets, V);
  EXPECT_EQ(logits.data_ptr(), logits_memory);
  EXPECT_EQ(logits.scalar_type(), dtype);
  EXPECT_FALSE(torch::equal(logits, values)) << "the logits were not overwritten by their gradient";
  expect_matches({loss, logits}, run_reference(values, targets, V), V, 1e-5, grad_rtol);
}

TEST(FusedCrossEntropy, WritesTheGradientOverTheLogits) {
  expect_gradient_over_the_logits(torch::kCPU, torch::kFloat, 1e-5);
  expect_gradient_over_the_logits(torch::kCPU, torch::kBFloat16, 1e-2);
}

TEST(FusedCrossEntropy, RejectsTargetsOutsideValidVocab) {
  auto logits = torch::randn({4, 20});
  auto targets = torch::tensor({1, 2, 15, 3}, torch::kLong);
  // 15 is a real column of the padded logits but not a class when valid_vocab = 15.
  expect_error_mentions([&] { cross_entropy_loss_and_grad_over_logits(logits.clone(), targets, 15); },
                        "cross_entropy_loss_and_grad_over_logits: targets[2] = 15 is outside [0, valid_vocab = 15)");
  expect_error_mentions(
      [&] { cross_entropy_loss_and_grad_over_logits(logits.clone(), torch::tensor({0, -1, 0, 0}, torch::kLong), 20); },
      "targets[1] = -1");
  EXPECT_NO_THROW(cross_entropy_loss_and_grad_over_logits(logits.clone(), targets, 16));
}

TEST(FusedCrossEntropy, RejectsInconsistentInputs) {
  auto logits = torch::randn({4, 20});
  auto targets = torch::zeros({4}, torch::kLong);
  auto op = [](const torch::Tensor& l, const torch::Tensor& t, int64_t v) {
    cross_entropy_loss_and_grad_over_logits(l.clone(), t, v);
  };
  expect_error_mentions([&] { op(logits, targets, 21); }, "valid_vocab = 21 is outside [1, Vp = 20]");
  expect_error_mentions([&] { op(logits, targets, 0); }, "valid_vocab = 0 is outside [1, Vp = 20]");
  expect_error_mentions([&] { op(logits, torch::zeros({5}, torch::kLong), 20); }, "targets has shape [5]");
  expect_error_mentions([&] { op(logits, targets.to(torch::kInt), 20); }, "targets has dtype Int");
  expect_error_mentions([&] { op(logits.to(torch::kDouble), targets, 20); }, "logits has dtype Double");
  expect_error_mentions([&] { op(logits.view({2, 2, 20}), targets, 20); }, "logits has shape [2, 2, 20]");
  // Not contiguous: the gradient could not be written over the logits' rows.
  expect_error_mentions([&] { cross_entropy_loss_and_grad_over_logits(torch::randn({20, 4}).t(), targets, 20); },
                        "logits and targets must be contiguous");
}

// The kernel setting's two names and nothing else; the CPU loops are the
// same under either (the setting picks a CUDA kernel).
TEST(FusedCrossEntropy, KernelSettingNamesAndCpuSameEitherWay) {
  EXPECT_EQ(parse_cross_entropy_kernel("batched"), CrossEntropyKernel::kBatched);
  EXPECT_EQ(parse_cross_entropy_kernel("online"), CrossEntropyKernel::kOnline);
  const SettingRestorer restore{cross_entropy_kernel(), set_cross_entropy_kernel};
  try {
    parse_cross_entropy_kernel("auto");
    ADD_FAILURE() << "parse_cross_entropy_kernel took 'auto'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'auto': expected batched or online"), std::string::npos) << e.what();
  }
  torch::manual_seed(3);
  const auto logits = make_logits(6, 56, 50, torch::kFloat);
  const auto targets = torch::randint(0, 50, {6}, torch::kLong);
  std::vector<CrossEntropyResult> got;
  for (auto k : {CrossEntropyKernel::kBatched, CrossEntropyKernel::kOnline}) {
    set_cross_entropy_kernel(k);
    EXPECT_EQ(cross_entropy_kernel(), k);
    got.push_back(run_fused(logits, targets, 50));
  }
  EXPECT_TRUE(torch::equal(got[0].loss, got[1].loss) && torch::equal(got[0].grad, got[1].grad));
}

// ---- CUDA kernel against the same reference (skipped without a GPU) -------------------

TEST(FusedCrossEntropy, CudaWritesTheGradientOverTheLogits) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  expect_gradient_over_the_logits(torch::kCUDA, torch::kFloat, 1e-5);
  expect_gradient_over_the_logits(torch::kCUDA, torch::kBFloat16, 1e-2);
}

TEST(FusedCrossEntropy, CudaMatchesReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // Vp = 3048 rows are read in 16-byte packs; Vp = 3001 ones value by value.
  for (const int64_t pad : {47, 0})
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    SCOPED_TRACE(::testing::Message() << "logits " << dtype << ", padding " << pad);
    torch::manual_seed(13);
    const int64_t N = 40, V = 3001, Vp = V + pad;
    const auto logits = make_logits(N, Vp, V, dtype).cuda();
    const auto targets = torch::randint(0, V, {N}, torch::kLong).cuda();
    expect_matches(run_fused(logits, targets, V), run_reference(logits, targets, V), V, 1e-5,
                   dtype == torch::kFloat ? 1e-4 : 1e-2);
  }
}

// The batched kernel (the default) and the online one, each against the
// reference and the two against each other: GPT-2's padded vocabulary (read
// in packs) and its unpadded one (value by value) at 256 rows (the host's
// double-precision comparisons of 2048 would take most of a minute), odd
// sizes, and -inf logits off the target; then a bad target, whose row's loss
// and gradient over [0, V) are NaN in both and whose padding stays 0.
TEST(FusedCrossEntropy, CudaBatchedAndOnlineKernelsAgree) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const SettingRestorer restore{cross_entropy_kernel(), set_cross_entropy_kernel};
  const CrossEntropyKernel kernels[] = {CrossEntropyKernel::kBatched, CrossEntropyKernel::kOnline};
  struct Shape {
    int64_t N, Vp, V;
  };
  for (const Shape sh : {Shape{256, 50304, 50257}, Shape{256, 50257, 50257}, Shape{40, 3048, 3001},
                         Shape{40, 3001, 3001}, Shape{3, 8, 5}})
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      SCOPED_TRACE(::testing::Message() << "N " << sh.N << ", Vp " << sh.Vp << ", V " << sh.V << ", " << dtype);
      torch::manual_seed(17);
      auto logits = make_logits(sh.N, sh.Vp, sh.V, dtype);
      const int64_t off = std::min<int64_t>(sh.V / 2, 100);  // columns [0, off) of row 0 are -inf
      logits.narrow(0, 0, 1).narrow(1, 0, off).fill_(-std::numeric_limits<float>::infinity());
      const auto targets = torch::randint(off, sh.V, {sh.N}, torch::kLong).cuda();
      logits = logits.cuda();
      const auto ref = run_reference(logits, targets, sh.V);
      const double grad_rtol = dtype == torch::kFloat ? 1e-4 : 1e-2;
      std::vector<CrossEntropyResult> got;
      for (auto k : kernels) {
        set_cross_entropy_kernel(k);
        got.push_back(run_fused(logits, targets, sh.V));
        SCOPED_TRACE(k == CrossEntropyKernel::kBatched ? "batched" : "online");
        expect_matches(got.back(), ref, sh.V, 1e-5, grad_rtol);
      }
      expect_close(got[0].loss.cpu(), got[1].loss.cpu(), 1e-5, 1e-5, "batched against online: loss");
      expect_close(got[0].grad.cpu().to(torch::kFloat), got[1].grad.cpu().to(torch::kFloat), grad_rtol,
                   grad_rtol / double(sh.N), "batched against online: dlogits");
    }
  torch::manual_seed(19);
  const auto logits = make_logits(4, 64, 60, torch::kBFloat16).cuda();
  const auto targets = torch::tensor({1, 60, 2, 3}, torch::kLong).cuda();  // row 1's target is padding
  for (auto k : kernels) {
    set_cross_entropy_kernel(k);
    const auto r = run_fused(logits, targets, 60);
    const auto grad = r.grad.cpu().to(torch::kFloat);
    EXPECT_TRUE(std::isnan(r.loss.item<float>()));
    EXPECT_TRUE(grad[1].narrow(0, 0, 60).isnan().all().item<bool>());
    EXPECT_TRUE(torch::equal(grad[1].narrow(0, 60, 4), torch::zeros({4})));
    EXPECT_FALSE(grad.narrow(0, 2, 2).isnan().any().item<bool>());
  }
}

}  // namespace
}  // namespace ladder::fused
