// tests/variants/test_embedding.cpp: token_embedding (variants/ops/embedding/embedding.h): its
// forward is at::embedding; its backward into a flat buffer's .grad() adds
// exactly what ATen's dense gradient would, hands autograd nothing for wte,
// zeroes a segment that first writes own when it writes first, and falls
// back to ATen's gradient without a buffer; at GPT-2's vocabulary and width.
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "tests/support/expect_close.h"
#include "variants/ops/embedding/embedding.h"
#include "variants/ops/grad_buffer.h"

namespace ladder::fused {
namespace {

using ladder::testing::expect_close;

// ATen's gradient of sum(embedding(idx) * dy) with respect to the weight, (V, C).
torch::Tensor aten_grad(const torch::Tensor& idx, const torch::Tensor& weight, const torch::Tensor& dy) {
  auto w = weight.detach().clone().requires_grad_();
  (at::embedding(w, idx) * dy).sum().backward();
  return w.grad();
}

// Tokens with repeats (each row gets several sums) and the last row.
torch::Tensor tokens(int64_t B, int64_t T, int64_t V) {
  auto idx = torch::randint(0, V / 8, {B, T}, torch::kLong);  // (B, T), many repeats
  idx[0][0] = V - 1;
  return idx;
}

void into_buffer_at(int64_t V, int64_t C, int64_t B, int64_t T) {
  SCOPED_TRACE(::testing::Message() << "V " << V << " C " << C << " B " << B << " T " << T);
  torch::manual_seed(3);
  auto weight = torch::randn({V, C}).requires_grad_();
  const auto idx = tokens(B, T, V);
  const auto dy = torch::randn({B, T, C});
  FlatGradients flat({weight});
  const auto before = torch::randn({V, C});  // what the buffer holds already (the lm_head's gradient)
  weight.mutable_grad().copy_(before);
  auto y = token_embedding(idx, weight, /*into_buffer=*/true);
  expect_close(y, at::embedding(weight.detach(), idx), 0, 0, "forward");
  (y * dy).sum().backward();
  EXPECT_TRUE(flat.intact()) << "autograd replaced wte's .grad() instead of leaving it to the op";
  // The same rows summed in another order than ATen's: a few float ulps.
  expect_close(weight.grad(), before + aten_grad(idx, weight, dy), 1e-5, 1e-5, "wte gradient");
}

TEST(TokenEmbedding, IntoTheBufferAddsAtensGradient) { into_buffer_at(64, 24, 2, 5); }

TEST(TokenEmbedding, IntoTheBufferAtGpt2VocabAndWidth) { into_buffer_at(50304, 768, 4, 64); }

// Rows in the same order on any thread count: bit for bit.
TEST(TokenEmbedding, RowsAddedTokenAfterTokenOnAnyThreadCount) {
  torch::manual_seed(4);
  const int64_t V = 97, C = 200, N = 300;
  const auto idx = torch::randint(0, 5, {N}, torch::kLong), g = torch::randn({N, C});
  auto one = torch::zeros({V, C}), many = torch::zeros({V, C}), want = torch::zeros({V, C});
  const int threads = at::get_num_threads();
  at::set_num_threads(1);
  embedding_rows_add_cpu(g.data_ptr<float>(), idx.data_ptr<int64_t>(), N, C, one.data_ptr<float>());
  at::set_num_threads(std::max(threads, 2));
  embedding_rows_add_cpu(g.data_ptr<float>(), idx.data_ptr<int64_t>(), N, C, many.data_ptr<float>());
  at::set_num_threads(threads);
  for (int64_t i = 0; i < N; ++i) want[idx[i].item<int64_t>()] += g[i];
  EXPECT_TRUE(torch::equal(one, want));
  EXPECT_TRUE(torch::equal(many, want));
}

// A segment owned by first writes and not written yet this step holds last
// step's gradient: the embedding, writing first, zeroes it before its rows.
TEST(TokenEmbedding, WritingFirstIntoAnOwnedSegmentZeroesIt) {
  torch::manual_seed(5);
  auto weight = torch::randn({40, 8}).requires_grad_();
  FlatGradients flat({weight});
  flat.write_first({weight});
  flat.zero();  // owned: not zeroed, marked unwritten
  weight.mutable_grad().fill_(7.0f);  // last step's values
  const auto idx = tokens(2, 3, 40);
  const auto dy = torch::randn({2, 3, 8});
  (token_embedding(idx, weight, true) * dy).sum().backward();
  expect_close(weight.grad(), aten_grad(idx, weight, dy), 1e-6, 1e-6, "wte gradient");
  EXPECT_NO_THROW(flat.check_first_writes());
}

// Without a buffer (or into_buffer off) autograd gets ATen's gradient.
TEST(TokenEmbedding, WithoutABufferAutogradGetsAtensGradient) {
  torch::manual_seed(6);
  const auto idx = tokens(2, 7, 64);
  const auto dy = torch::randn({2, 7, 16});
  for (const bool into : {false, true}) {
    auto weight = torch::randn({64, 16}).requires_grad_();
    (token_embedding(idx, weight, into) * dy).sum().backward();
    ASSERT_TRUE(weight.grad().defined()) << "into_buffer " << into;
    expect_close(weight.grad(), aten_grad(idx, weight, dy), 1e-6, 1e-6, "wte gradient");
  }
}

}  // namespace
}  // namespace ladder::fused
