// tests/variants/test_act_ckpt.cpp: activation checkpointing (the act-ckpt switch,
// variants/model/model.cpp): the same maths as without it, on the plain and the
// fused-LayerNorm model paths and under bf16 autocast, per parameter
// gradient; the blocks' internals stay out of the autograd graph; the switch
// is reported effective.
#include <set>

#include <gtest/gtest.h>

#include "tests/support/tiny_step.h"
#include "variants/model/model.h"

namespace ladder {
namespace {

// Step 0's loss and every parameter's gradient of a tiny step of `rung`.
std::pair<double, std::vector<std::pair<std::string, torch::Tensor>>> first_step(const char* rung) {
  auto step = tiny_cpu_step(rung);
  step->keep_gradients_of_step(0);
  PhaseObserver none;
  const double loss = step->run(0, none).loss.item<double>();
  return {loss, step->kept_gradients()};
}

void expect_same_step(const char* base, const char* checkpointed, double rtol) {
  const auto [loss_a, grads_a] = first_step(base);
  const auto [loss_b, grads_b] = first_step(checkpointed);
  EXPECT_NEAR(loss_a, loss_b, rtol * std::abs(loss_a)) << checkpointed;
  ASSERT_EQ(grads_a.size(), grads_b.size());
  for (size_t k = 0; k < grads_a.size(); ++k) {
    const auto& [name, a] = grads_a[k];
    const auto& b = grads_b[k].second;
    const double scale = a.abs().max().item<double>() + 1e-12;
    EXPECT_LE((a - b).abs().max().item<double>() / scale, rtol) << checkpointed << ": " << name;
  }
}

TEST(ActCkpt, SameLossAndGradientsAsWithout) {
  expect_same_step("fp32", "fp32+act-ckpt", 1e-6);
  // The fused LayerNorms hand (x, normed) across block boundaries.
  expect_same_step("fp32+fused-ln+fused-linear", "fp32+fused-ln+fused-linear+act-ckpt", 1e-6);
  // The recompute runs under the forward's autocast (bf16 here: a tiny
  // step's config applies bf16 whether or not this CPU has it natively), so
  // it rounds as the forward did.
  expect_same_step("fp32+bf16+fused-ln", "fp32+bf16+fused-ln+act-ckpt", 1e-6);
}

// Nodes of the autograd graph reachable from a loss.
size_t graph_nodes(const torch::Tensor& loss) {
  std::vector<torch::autograd::Node*> stack = {loss.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!stack.empty()) {
    auto* node = stack.back();
    stack.pop_back();
    if (!node || !seen.insert(node).second) continue;
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return seen.size();
}

// What the forward keeps for backward: with checkpointing, one node per block
// (holding only the block's inputs), not the block's internals.
TEST(ActCkpt, BlocksInternalsStayOutOfTheGraph) {
  auto nodes = [](bool checkpoint) {
    ModelOptions options;
    options.checkpoint_blocks = checkpoint;
    GPT model(ModelConfig{4, 2, 64, 64, 1000}, options);
    init_gpt2_weights(model, 1);
    auto idx = torch::randint(1000, {2, 16}, torch::kLong);
    return graph_nodes(model->loss(idx, idx));
  };
  const size_t plain = nodes(false), checkpointed = nodes(true);
  EXPECT_LT(checkpointed, plain / 2) << checkpointed << " vs " << plain;
}

TEST(ActCkpt, ReportedEffectiveWithItsRecomputes) {
  const int64_t before = block_recomputes();
  auto step = tiny_cpu_step("fp32+act-ckpt");
  PhaseObserver none;
  step->run(0, none);
  EXPECT_EQ(block_recomputes() - before, step->model()->config().n_layer);  // one recompute per block
  const auto sw = step->describe_switches();
  EXPECT_TRUE(sw.at("act-ckpt").effective.value()) << dump(sw.at("act-ckpt"));
  EXPECT_FALSE(tiny_cpu_step("fp32")->plan().model.checkpoint_blocks);
}

}  // namespace
}  // namespace ladder
