// variants/ops/embedding/embedding.h: the token embedding of the flat-grads rungs on a
// CPU, whose backward adds the tokens' gradient rows into wte's .grad() in
// place instead of making ATen's dense (Vp, C) gradient.
//
// ATen's embedding backward on a CPU allocates a zeroed (Vp, C) tensor,
// adds the rows into it, and hands it to autograd, which adds it into
// .grad(): a memset and an add over all of wte for a few thousand rows
// (gpt2-124m: 155 MB zeroed, then 155 MB read twice and written, for 256
// tokens at B4 T64). With the flat buffer the rows go straight into .grad().
#pragma once

#include <torch/torch.h>

namespace ladder::fused {

// weight (V, C) float32; idx int64 of any shape. Returns weight[idx]
// (idx's shape, C), as at::embedding. Backward: with into_buffer, on a CPU,
// where weight.grad() is a defined float32 tensor, each token's gradient row
// is added into .grad()'s row idx, token after token (each element's sum in
// the same order on any thread count: the threads split the columns), and
// autograd gets no gradient for weight; where the flat buffer's first writes
// own .grad() (variants/ops/grad_buffer.h) and nothing has written it yet this
// step, it is zeroed first. Otherwise ATen's embedding_backward, handed to
// autograd.
torch::Tensor token_embedding(const torch::Tensor& idx, const torch::Tensor& weight, bool into_buffer);

// Adds g's rows into out: out[idx[i], c] += g[i, c] for i in [0, N), c in
// [0, C), i ascending. g (N, C), out (V, C) row-major float32; idx in [0, V).
void embedding_rows_add_cpu(const float* g, const int64_t* idx, int64_t N, int64_t C, float* out);

}  // namespace ladder::fused
