// variants/ops/embedding/embedding.cpp: token_embedding (see embedding.h).
#include "variants/ops/embedding/embedding.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>

#include "variants/ops/cpu_rows.h"
#include "variants/ops/grad_buffer.h"

namespace ladder::fused {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

namespace {

// Columns [c0, c1) of every token's row, tokens in order.
LADDER_CPU_CLONES void embedding_rows_add_columns(int64_t c0, int64_t c1, const float* __restrict g,
                                                  const int64_t* idx, int64_t N, int64_t C, float* __restrict out) {
  for (int64_t i = 0; i < N; ++i) {
    float* __restrict dst = out + idx[i] * C;
    const float* __restrict src = g + i * C;
    for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
  }
}

class TokenEmbeddingFunction : public torch::autograd::Function<TokenEmbeddingFunction> {
 public:
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& idx, const torch::Tensor& weight,
                               bool into_buffer) {
    ctx->save_for_backward({idx, weight});
    ctx->saved_data["into_buffer"] = into_buffer;
    return at::embedding(weight, idx);  // (..., C)
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto &idx = saved[0], &weight = saved[1];
    const auto& dy = grad_outputs[0];  // (..., C)
    if (!dy.defined()) return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    torch::Tensor grad = weight.grad();  // a handle on the same tensor
    if (ctx->saved_data["into_buffer"].toBool() && dy.is_cpu() && grad.defined() &&
        grad.scalar_type() == at::kFloat && grad.is_contiguous() && grad.sizes() == weight.sizes()) {
      RECORD_FUNCTION("ladder::embedding_grad_add", std::vector<c10::IValue>({dy}));
      torch::NoGradGuard no_grad;
      const int64_t C = weight.size(1);
      const auto rows = dy.to(at::kFloat).contiguous().view({-1, C});  // (N, C)
      const auto tokens = idx.contiguous().view({-1});                  // (N)
      if (FirstWrites::claim_first(grad)) grad.zero_();  // nothing wrote it yet this step
      embedding_rows_add_cpu(rows.data_ptr<float>(), tokens.data_ptr<int64_t>(), rows.size(0), C,
                             grad.data_ptr<float>());
      return {torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
    return {torch::Tensor(),
            at::embedding_backward(dy, idx, weight.size(0), /*padding_idx=*/-1, /*scale_grad_by_freq=*/false,
                                   /*sparse=*/false),
            torch::Tensor()};
  }
};

}  // namespace

void embedding_rows_add_cpu(const float* g, const int64_t* idx, int64_t N, int64_t C, float* out) {
  // 64 columns (256 bytes) at least a thread: whole vectors, and rows of
  // gpt2-124m (768) split over up to 12 threads.
  at::parallel_for(0, C, 64, [&](int64_t c0, int64_t c1) { embedding_rows_add_columns(c0, c1, g, idx, N, C, out); });
}

torch::Tensor token_embedding(const torch::Tensor& idx, const torch::Tensor& weight, bool into_buffer) {
  TORCH_CHECK(weight.dim() == 2, "token_embedding: weight must be (V, C), got ", weight.sizes());
  TORCH_CHECK(idx.scalar_type() == at::kLong, "token_embedding: idx must be int64, got ", idx.scalar_type());
  return TokenEmbeddingFunction::apply(idx, weight, into_buffer);
}

}  // namespace ladder::fused
