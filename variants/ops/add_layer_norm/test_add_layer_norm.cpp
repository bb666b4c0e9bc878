// variants/ops/add_layer_norm/test_add_layer_norm.cpp: the fused residual add + LayerNorm of
// variants/ops/add_layer_norm/add_layer_norm.h against its composite-ATen reference: forward values
// and every gradient, in fp32, with a bf16 residual and a bf16 output, odd
// sizes, one output alone; the input checks; on CUDA where a GPU is present.
// The classifier's cross-entropy is tested in variants/ops/cross_entropy/test_cross_entropy.cpp.
#include <array>
#include <cmath>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/expect_close.h"
#include "variants/ops/add_layer_norm/add_layer_norm.h"

namespace ladder::fused {
namespace {

using ladder::testing::expect_close;
using ladder::testing::expect_error_mentions;
using ladder::testing::SettingRestorer;

// ---- add + LayerNorm --------------------------------------------------------------------

using AddLayerNormOp = std::function<std::tuple<torch::Tensor, torch::Tensor>(
    const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, at::ScalarType)>;

struct AddLayerNormResult {
  torch::Tensor s, y, dx, dresidual, dweight, dbias;
};

// Forward, then backward from random upstream gradients of both outputs
// (or of y alone when use_s is false); y's gradient comes in y's dtype.
AddLayerNormResult run_add_layer_norm(const AddLayerNormOp& op, const std::vector<int64_t>& shape,
                                      torch::ScalarType residual_dtype, bool use_s, torch::ScalarType y_dtype) {
  torch::manual_seed(7);
  const int64_t C = shape.back();
  auto x = torch::randn(shape).requires_grad_();                                    // (..., C)
  auto residual = torch::randn(shape).to(residual_dtype).requires_grad_();         // (..., C)
  auto weight = (1 + 0.1 * torch::randn({C})).requires_grad_();                     // (C)
  auto bias = (0.1 * torch::randn({C})).requires_grad_();                           // (C)
  auto ds = torch::randn(shape), dy = torch::randn(shape).to(y_dtype);
  auto [s, y] = op(x, residual, weight, bias, y_dtype);
  if (use_s)
    torch::autograd::backward({s, y}, {ds, dy});
  else
    torch::autograd::backward({y}, {dy});
  return {s.detach(), y.detach(), x.grad(), residual.grad(), weight.grad(), bias.grad()};
}

AddLayerNormResult run_fused(const std::vector<int64_t>& shape, torch::ScalarType residual_dtype,
                             bool use_s = true, torch::ScalarType y_dtype = torch::kFloat) {
  return run_add_layer_norm(
      [](auto& x, auto& r, auto& w, auto& b, auto y_dt) { return add_layer_norm(x, r, w, b, 1e-5, y_dt); }, shape,
      residual_dtype, use_s, y_dtype);
}
AddLayerNormResult run_reference(const std::vector<int64_t>& shape, torch::ScalarType residual_dtype,
                                 bool use_s = true, torch::ScalarType y_dtype = torch::kFloat) {
  return run_add_layer_norm(
      [](auto& x, auto& r, auto& w, auto& b, auto y_dt) { return add_layer_norm_reference(x, r, w, b, 1e-5, y_dt); },
      shape, residual_dtype, use_s, y_dtype);
}

// A bf16 y may differ from the reference's by one rounding step (2^-8
// relative): both round an fp32 value computed in a different order.
constexpr double kBf16RoundingTol = 8e-3;

// rtol/atol for fp32 tensors; residual_tol for the residual gradient (its
// dtype's precision); y within its own dtype's rounding.
void expect_add_layer_norm_matches(const std::vector<int64_t>& shape, torch::ScalarType residual_dtype,
                                   double tol, double residual_tol, bool use_s = true,
                                   torch::ScalarType y_dtype = torch::kFloat) {
  SCOPED_TRACE(::testing::Message() << "shape " << torch::IntArrayRef(shape) << ", residual " << residual_dtype
                                    << ", y " << y_dtype << (use_s ? "" : ", y alone"));
  const auto fused = run_fused(shape, residual_dtype, use_s, y_dtype);
  const auto ref = run_reference(shape, residual_dtype, use_s, y_dtype);
  const double y_tol = y_dtype == torch::kBFloat16 ? kBf16RoundingTol : tol;
  EXPECT_EQ(fused.y.scalar_type(), y_dtype);
  expect_close(fused.s, ref.s, tol, tol, "s");
  expect_close(fused.y, ref.y, y_tol, y_tol, "y");
  expect_close(fused.dx, ref.dx, tol, tol, "dx");
  expect_close(fused.dresidual, ref.dresidual, residual_tol, residual_tol, "dresidual");
  expect_close(fused.dweight, ref.dweight, tol, tol, "dweight");
  expect_close(fused.dbias, ref.dbias, tol, tol, "dbias");
}

TEST(FusedAddLayerNorm, Float32MatchesReference) {
  expect_add_layer_norm_matches({3, 50, 64}, torch::kFloat, 2e-5, 2e-5);  // 150 rows: several thread chunks
}

TEST(FusedAddLayerNorm, Bf16ResidualMatchesReference) {
  expect_add_layer_norm_matches({2, 8, 96}, torch::kBFloat16, 2e-5, 1e-2);
  const auto fused = run_fused({2, 8, 96}, torch::kBFloat16);
  EXPECT_EQ(fused.s.scalar_type(), torch::kFloat);
  EXPECT_EQ(fused.y.scalar_type(), torch::kFloat);
  EXPECT_EQ(fused.dresidual.scalar_type(), torch::kBFloat16);
}

TEST(FusedAddLayerNorm, Bf16OutputMatchesReferenceAndTakesABf16Gradient) {
  // What the fused rung does under bf16 autocast: y leaves in bf16 for the
  // next matmul and its gradient comes back in bf16. Everything but y's own
  // rounding stays as exact as the fp32 case: the kernels widen dy to fp32.
  expect_add_layer_norm_matches({3, 50, 64}, torch::kFloat, 2e-5, 2e-5, /*use_s=*/true, torch::kBFloat16);
  expect_add_layer_norm_matches({2, 8, 96}, torch::kBFloat16, 2e-5, 1e-2, /*use_s=*/true, torch::kBFloat16);
  expect_add_layer_norm_matches({5, 19}, torch::kBFloat16, 2e-5, 1e-2, /*use_s=*/false, torch::kBFloat16);
  const auto fused = run_fused({2, 8, 96}, torch::kBFloat16, /*use_s=*/true, torch::kBFloat16);
  EXPECT_EQ(fused.s.scalar_type(), torch::kFloat);
  EXPECT_EQ(fused.dx.scalar_type(), torch::kFloat);
  EXPECT_EQ(fused.dresidual.scalar_type(), torch::kBFloat16);
  EXPECT_EQ(fused.dweight.scalar_type(), torch::kFloat);
}

TEST(FusedAddLayerNorm, Bf16OutputIsTheRoundedFloat32Output) {
  // Same inputs, y in fp32 and in bf16: the bf16 y is the fp32 one rounded to
  // nearest even, bit for bit (one rounding, no bf16 arithmetic).
  torch::manual_seed(5);
  auto x = torch::randn({9, 40}), r = torch::randn({9, 40}).to(torch::kBFloat16);
  auto w = 1 + 0.1 * torch::randn({40}), b = 0.1 * torch::randn({40});
  const auto y32 = std::get<1>(add_layer_norm(x, r, w, b, 1e-5, torch::kFloat));
  const auto y16 = std::get<1>(add_layer_norm(x, r, w, b, 1e-5, torch::kBFloat16));
  EXPECT_TRUE(torch::equal(y16, y32.to(torch::kBFloat16)));
}

TEST(FusedAddLayerNorm, OddSizesMatchReference) {
  expect_add_layer_norm_matches({1, 37}, torch::kFloat, 2e-5, 2e-5);     // N = 1, C not a multiple of 8
  expect_add_layer_norm_matches({3, 5, 13}, torch::kFloat, 2e-5, 2e-5);  // C below one lane block
  expect_add_layer_norm_matches({5, 19}, torch::kBFloat16, 2e-5, 1e-2);
}

TEST(FusedAddLayerNorm, SingleChannelGivesBiasAndPassesGradientThrough) {
  // C = 1: s - mean is exactly 0, so y = bias, dx = ds, dweight = 0, dbias = sum dy.
  // The reference's rounding is amplified here by rstd = 1/sqrt(eps) ~ 316, so
  // check against these values instead (dx within that amplified rounding).
  torch::manual_seed(2);
  auto x = torch::randn({7, 1}).requires_grad_(), r = torch::randn({7, 1}).requires_grad_();
  auto w = torch::full({1}, 1.5).requires_grad_(), b = torch::full({1}, 0.25).requires_grad_();
  auto ds = torch::randn({7, 1}), dy = torch::randn({7, 1});
  auto [s, y] = add_layer_norm(x, r, w, b);
  torch::autograd::backward({s, y}, {ds, dy});
  EXPECT_TRUE(torch::equal(y, torch::full({7, 1}, 0.25)));
  expect_close(x.grad(), ds, 0.0, 1e-4, "dx");
  expect_close(r.grad(), ds, 0.0, 1e-4, "dresidual");
  EXPECT_EQ(w.grad().item<float>(), 0.f);
  EXPECT_NEAR(b.grad().item<float>(), dy.sum().item<float>(), 1e-6);
}

TEST(FusedAddLayerNorm, GradientThroughYAloneMatchesReference) {
  // s unused: its upstream gradient is undefined, not zeros, inside the fused backward.
  expect_add_layer_norm_matches({4, 40}, torch::kFloat, 2e-5, 2e-5, /*use_s=*/false);
}

TEST(FusedAddLayerNorm, GradientThroughSAlonePassesStraightThrough) {
  // y unused: ds flows to x and residual unchanged; weight and bias get zeros.
  torch::manual_seed(4);
  auto x = torch::randn({6, 24}).requires_grad_();
  auto r = torch::randn({6, 24}).to(torch::kBFloat16).requires_grad_();
  auto w = torch::randn({24}).requires_grad_(), b = torch::randn({24}).requires_grad_();
  auto ds = torch::randn({6, 24});
  auto [s, y] = add_layer_norm(x, r, w, b);
  s.backward(ds);
  EXPECT_TRUE(torch::equal(x.grad(), ds));
  EXPECT_TRUE(torch::equal(r.grad(), ds.to(torch::kBFloat16)));
  EXPECT_TRUE(torch::equal(w.grad(), torch::zeros({24})));
  EXPECT_TRUE(torch::equal(b.grad(), torch::zeros({24})));
}

TEST(FusedAddLayerNorm, RejectsInconsistentInputs) {
  auto x = torch::randn({4, 8});
  auto w = torch::ones({8}), b = torch::zeros({8});
  expect_error_mentions([&] { add_layer_norm(x, torch::randn({4, 7}), w, b); }, "residual has shape [4, 7]");
  expect_error_mentions([&] { add_layer_norm(x, x, torch::ones({9}), b); }, "weight has shape [9]");
  expect_error_mentions([&] { add_layer_norm(x, x, w, torch::zeros({4, 8})); }, "bias has shape [4, 8]");
  expect_error_mentions([&] { add_layer_norm(x.to(torch::kBFloat16), x, w, b); }, "x has dtype BFloat16");
  expect_error_mentions([&] { add_layer_norm(x, x.to(torch::kDouble), w, b); }, "residual has dtype Double");
  expect_error_mentions([&] { add_layer_norm(x, x, w, b, 1e-5, torch::kHalf); }, "y_dtype is Half");
}

TEST(FusedAddLayerNorm, AcceptsNonContiguousInputs) {
  torch::manual_seed(3);
  auto x = torch::randn({16, 6}).t();  // (6, 16), transposed view
  auto r = torch::randn({6, 16});
  auto w = torch::randn({16}), b = torch::randn({16});
  ASSERT_FALSE(x.is_contiguous());
  auto [s, y] = add_layer_norm(x, r, w, b);
  auto [s_ref, y_ref] = add_layer_norm_reference(x, r, w, b);
  expect_close(s, s_ref, 1e-6, 1e-6, "s");
  expect_close(y, y_ref, 2e-5, 2e-5, "y");
}

// --layer-norm-kernel's two names, and only those; the CPU loops launch no
// CUDA kernel, whatever the setting.
TEST(FusedAddLayerNorm, KernelSettingNamesAndCpuLaunchesNone) {
  EXPECT_EQ(parse_layer_norm_kernel("auto"), LayerNormKernel::kAuto);
  EXPECT_EQ(parse_layer_norm_kernel("row"), LayerNormKernel::kRow);
  try {
    parse_layer_norm_kernel("vector");
    ADD_FAILURE() << "parse_layer_norm_kernel took 'vector'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'vector': expected auto or row"), std::string::npos) << e.what();
  }
  const LayerNormLaunches start = layer_norm_launches();
  {
    const SettingRestorer restore{layer_norm_kernel(), set_layer_norm_kernel};
    for (LayerNormKernel k : {LayerNormKernel::kRow, LayerNormKernel::kAuto}) {
      set_layer_norm_kernel(k);
      EXPECT_EQ(layer_norm_kernel(), k);
      run_fused({2, 5, 8}, torch::kFloat);
    }
  }
  const LayerNormLaunches n = layer_norm_launches() - start;
  EXPECT_EQ(n.forward_vector + n.forward_row + n.backward_vector + n.backward_row, 0);
}

// ---- CUDA kernels against the same references (skipped without a GPU) -------------------

TEST(FusedAddLayerNorm, CudaMatchesReference) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  using Shape = std::array<int64_t, 3>;  // (B, T, C)
  // 210 rows of 200 (not a multiple of the warp size): 7 chunks of rows, the
  // last one partial; 1204 rows of GPT-2's 768: 38 chunks whose weight
  // gradients the second stage sums.
  for (const Shape& shape : {Shape{3, 70, 200}, Shape{4, 301, 768}})
  for (auto [residual_dtype, y_dtype] : {std::pair{torch::kFloat, torch::kFloat},
                                         std::pair{torch::kBFloat16, torch::kFloat},
                                         std::pair{torch::kFloat, torch::kBFloat16},
                                         std::pair{torch::kBFloat16, torch::kBFloat16}}) {
    const int64_t B = shape[0], T = shape[1], C = shape[2];
    SCOPED_TRACE(::testing::Message() << "residual " << residual_dtype << ", y " << y_dtype << ", (" << B << ", "
                                      << T << ", " << C << ")");
    torch::manual_seed(9);
    auto x = torch::randn({B, T, C}).cuda().requires_grad_();                    // (B, T, C)
    auto r = torch::randn({B, T, C}).to(residual_dtype).cuda().requires_grad_();  // (B, T, C)
    auto w = (1 + 0.1 * torch::randn({C})).cuda().requires_grad_();
    auto b = (0.1 * torch::randn({C})).cuda().requires_grad_();
    auto ds = torch::randn({B, T, C}).cuda(), dy = torch::randn({B, T, C}).to(y_dtype).cuda();
    std::vector<torch::Tensor> got, want;
    for (bool fused : {true, false}) {
      for (auto* t : {&x, &r, &w, &b}) t->mutable_grad().reset();
      auto [s, y] = fused ? add_layer_norm(x, r, w, b, 1e-5, y_dtype)
                          : add_layer_norm_reference(x, r, w, b, 1e-5, y_dtype);
      torch::autograd::backward({s, y}, {ds, dy});
      // Assigned through a named reference: GCC 13 rejects a braced list assigned to a conditional.
      std::vector<torch::Tensor>& results = fused ? got : want;
      results = {s.detach(), y.detach(), x.grad(), r.grad(), w.grad(), b.grad()};
    }
    const char* names[] = {"s", "y", "dx", "dresidual", "dweight", "dbias"};
    for (size_t i = 0; i < got.size(); ++i) {
      const double tol = (i == 3 && residual_dtype == torch::kBFloat16) ? 1e-2
                         : (i == 1 && y_dtype == torch::kBFloat16)        ? kBf16RoundingTol
                                                                          : 1e-4;
      expect_close(got[i].cpu(), want[i].cpu(), tol, tol, names[i]);
    }
  }
}

TEST(FusedAddLayerNorm, CudaOneOutputAloneAndDeterministicWeightGradient) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  torch::manual_seed(10);
  const int64_t B = 4, T = 301, C = 768;
  auto x = torch::randn({B, T, C}).cuda().requires_grad_();
  auto r = torch::randn({B, T, C}).to(torch::kBFloat16).cuda().requires_grad_();
  auto w = (1 + 0.1 * torch::randn({C})).cuda().requires_grad_();
  auto b = (0.1 * torch::randn({C})).cuda().requires_grad_();
  auto ds = torch::randn({B, T, C}).cuda(), dy = torch::randn({B, T, C}).to(torch::kBFloat16).cuda();
  auto backward = [&](bool use_s, bool use_y, bool fused) {
    for (auto* t : {&x, &r, &w, &b}) t->mutable_grad().reset();
    auto [s, y] = fused ? add_layer_norm(x, r, w, b, 1e-5, torch::kBFloat16)
                        : add_layer_norm_reference(x, r, w, b, 1e-5, torch::kBFloat16);
    if (use_s && use_y) torch::autograd::backward({s, y}, {ds, dy});
    if (use_s && !use_y) s.backward(ds);
    if (!use_s && use_y) y.backward(dy);
    return std::vector<torch::Tensor>{x.grad().cpu(), r.grad().cpu(), w.grad().cpu(), b.grad().cpu()};
  };
  // s alone: the gradient passes straight through; weight and bias get zeros.
  auto s_alone = backward(true, false, true);
  EXPECT_TRUE(torch::equal(s_alone[0], ds.cpu()));
  EXPECT_TRUE(torch::equal(s_alone[2], torch::zeros({C})));
  EXPECT_TRUE(torch::equal(s_alone[3], torch::zeros({C})));
  // y alone: no incoming ds.
  auto y_alone = backward(false, true, true), y_ref = backward(false, true, false);
  const char* names[] = {"dx", "dresidual", "dweight", "dbias"};
  for (size_t i = 0; i < y_alone.size(); ++i)
    expect_close(y_alone[i], y_ref[i], i == 1 ? 1e-2 : 1e-4, i == 1 ? 1e-2 : 1e-4, names[i]);
  // The two-stage weight gradient sums in a fixed order: bit for bit the same twice.
  auto first = backward(true, true, true), second = backward(true, true, true);
  for (size_t i = 0; i < first.size(); ++i) EXPECT_TRUE(torch::equal(first[i], second[i])) << names[i];
}

// The vector kernels against the row kernels and the reference, at GPT-2's
// widths (small, medium, large, xl) and at the widest they take, on a full
// step's 16384 rows at 768 (512 chunks, the H100's grid); where they cannot
// run (C not a multiple of 4, wider than 2048, a misaligned tensor) the row
// kernels run under auto too. The launch counts say which ran. A misaligned
// x keeps the forward on the row kernel only: the backward reads s and the
// gradients, which are the op's own, aligned.
TEST(FusedAddLayerNorm, CudaVectorAndRowKernelsAgree) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  struct Case {
    int64_t N, C;
    bool misaligned, forward_vector, backward_vector;
  };
  const Case cases[] = {{16384, 768, false, true, true}, {1000, 1024, false, true, true},
                        {1000, 1280, false, true, true}, {1000, 1600, false, true, true},
                        {300, 2048, false, true, true},  {300, 770, false, false, false},
                        {300, 2052, false, false, false}, {300, 768, true, false, true}};
  const SettingRestorer restore{layer_norm_kernel(), set_layer_norm_kernel};
  for (const Case& k : cases) {
    SCOPED_TRACE(::testing::Message() << "N " << k.N << ", C " << k.C << (k.misaligned ? ", misaligned" : ""));
    torch::manual_seed(11);
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    // misaligned: x starts one float into its storage (contiguous, 4-byte aligned only).
    auto x_storage = torch::randn({k.N * k.C + 1}, cuda);
    auto x = (k.misaligned ? x_storage.narrow(0, 1, k.N * k.C) : x_storage.narrow(0, 0, k.N * k.C))
                 .view({k.N, k.C})
                 .requires_grad_();  // a leaf: narrow of a tensor without grad
    auto r = torch::randn({k.N, k.C}, cuda).to(torch::kBFloat16).requires_grad_();
    auto w = (1 + 0.1 * torch::randn({k.C}, cuda)).requires_grad_();
    auto b = (0.1 * torch::randn({k.C}, cuda)).requires_grad_();
    auto ds = torch::randn({k.N, k.C}, cuda), dy = torch::randn({k.N, k.C}, cuda).to(torch::kBFloat16);
    std::vector<std::vector<torch::Tensor>> results;
    for (int run = 0; run < 3; ++run) {  // auto, row, the ATen reference
      for (auto* t : {&x, &r, &w, &b}) t->mutable_grad().reset();
      set_layer_norm_kernel(run == 1 ? LayerNormKernel::kRow : LayerNormKernel::kAuto);
      const LayerNormLaunches start = layer_norm_launches();
      auto [s, y] = run < 2 ? add_layer_norm(x, r, w, b, 1e-5, torch::kBFloat16)
                            : add_layer_norm_reference(x, r, w, b, 1e-5, torch::kBFloat16);
      torch::autograd::backward({s, y}, {ds, dy});
      const LayerNormLaunches n = layer_norm_launches() - start;
      if (run < 2) {
        const bool forward = run == 0 && k.forward_vector, backward = run == 0 && k.backward_vector;
        EXPECT_EQ(n.forward_vector, forward ? 1 : 0) << "run " << run;
        EXPECT_EQ(n.forward_row, forward ? 0 : 1) << "run " << run;
        EXPECT_EQ(n.backward_vector, backward ? 1 : 0) << "run " << run;
        EXPECT_EQ(n.backward_row, backward ? 0 : 1) << "run " << run;
      }
      results.push_back({s.detach().cpu(), y.detach().to(torch::kFloat).cpu(), x.grad().cpu(), r.grad().to(torch::kFloat).cpu(),
                         w.grad().cpu(), b.grad().cpu()});
    }
    const char* names[] = {"s", "y", "dx", "dresidual", "dweight", "dbias"};
    for (size_t i = 0; i < results[0].size(); ++i) {
      // s is the same sum either way; y and dresidual are bf16 (one rounding
      // step apart at most); the rest differ by the order of a row's sums.
      const double tol = i == 0 ? 0 : (i == 1 || i == 3) ? kBf16RoundingTol : 1e-4;
      expect_close(results[0][i], results[1][i], tol, tol, std::string(names[i]) + ": vector against row");
      expect_close(results[0][i], results[2][i], i == 0 ? 1e-6 : tol, i == 0 ? 1e-6 : tol,
                   std::string(names[i]) + ": vector against the reference");
    }
    // The bias gradient, a plain sum of dy, is summed in the row kernel's order: the same bits.
    EXPECT_TRUE(torch::equal(results[0][5], results[1][5])) << "dbias: vector and row sum in one order";
  }
}

}  // namespace
}  // namespace ladder::fused
