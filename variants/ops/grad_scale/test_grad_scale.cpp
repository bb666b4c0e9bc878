// variants/ops/grad_scale/test_grad_scale.cpp: fused::grad_scale_ against its
// reference, at the tests' widths and GPT-2's, on a CPU (CUDA takes ATen's
// mul_, the reference's own op).
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "variants/ops/grad_scale/grad_scale.h"

namespace ladder {
namespace {

// Parameters of GPT-2's shapes at width C, each with a gradient drawn from a
// fixed seed; one without a gradient.
std::vector<torch::Tensor> params_with_grads(int64_t C) {
  torch::manual_seed(7);
  std::vector<torch::Tensor> params;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{3 * C, C}, {C}, {4 * C, C}, {C, 4 * C}}) {
    auto p = torch::zeros(shape, torch::requires_grad());
    p.mutable_grad() = torch::randn(shape);
    params.push_back(p);
  }
  params.push_back(torch::zeros({C}, torch::requires_grad()));  // no gradient: left alone
  return params;
}

TEST(GradScale, MatchesTheReferenceAtTinyAndGpt2Widths) {
  for (int64_t C : {64, 768}) {
    for (double scale : {1.0, 0.5, 1.0 / 3.0}) {
      auto params = params_with_grads(C);
      const auto want = fused::grad_scale_reference(params, scale);
      fused::grad_scale_(params, scale);
      ASSERT_EQ(want.size(), 4u);
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(torch::equal(params[i].grad(), want[i])) << "C " << C << " scale " << scale << " param " << i;
      EXPECT_FALSE(params.back().grad().defined());
    }
  }
}

TEST(GradScale, OneLeavesEveryBitAndCountsTheCall) {
  auto params = params_with_grads(64);
  std::vector<torch::Tensor> before;
  for (size_t i = 0; i + 1 < params.size(); ++i) before.push_back(params[i].grad().clone());
  const int64_t calls = fused::grad_scale_calls();
  fused::grad_scale_(params, 1.0);
  EXPECT_EQ(fused::grad_scale_calls(), calls + 1);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(torch::equal(params[i].grad(), before[i])) << i;
}

}  // namespace
}  // namespace ladder
