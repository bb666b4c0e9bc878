// variants/ops/cross_entropy/cross_entropy.cpp: cross_entropy_loss_and_grad_over_logits (see
// cross_entropy.h): its input checks, the CPU rows, the adapter to the CUDA
// launcher (variants/ops/cross_entropy/cross_entropy_cuda.h) and the composite-ATen reference.
#include "variants/ops/cross_entropy/cross_entropy.h"

#include <atomic>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <ATen/Parallel.h>

#include "variants/ops/cpu_rows.h"
#include "variants/ops/op_device.h"

#ifdef LADDER_WITH_CUDA
#include <c10/cuda/CUDAGuard.h>

#include "variants/ops/cross_entropy/cross_entropy_cuda.h"
#endif

namespace ladder::fused {

using namespace cpu_rows;  // the row helpers, unqualified in the loops below

namespace {

// ---- input checks --------------------------------------------------------------------

void check_cross_entropy_inputs(const torch::Tensor& logits, const torch::Tensor& targets, int64_t valid_vocab) {
  constexpr const char* op = "cross_entropy_loss_and_grad_over_logits";
  TORCH_CHECK(logits.defined() && targets.defined(), op, ": logits and targets must be defined tensors");
  TORCH_CHECK(logits.dim() == 2, op, ": logits has shape ", logits.sizes(), "; expected (N, Vp)");
  TORCH_CHECK(logits.scalar_type() == at::kFloat || logits.scalar_type() == at::kBFloat16, op,
              ": logits has dtype ", logits.scalar_type(), "; expected float32 or bfloat16");
  const int64_t N = logits.size(0), Vp = logits.size(1);
  TORCH_CHECK(N > 0, op, ": logits has shape ", logits.sizes(), "; expected at least one row");
  TORCH_CHECK(valid_vocab >= 1 && valid_vocab <= Vp, op, ": valid_vocab = ", valid_vocab,
              " is outside [1, Vp = ", Vp, "] for logits of shape ", logits.sizes());
  TORCH_CHECK(targets.dim() == 1 && targets.size(0) == N, op, ": targets has shape ", targets.sizes(),
              "; expected (N) = (", N, ") to match logits ", logits.sizes());
  TORCH_CHECK(targets.scalar_type() == at::kLong, op, ": targets has dtype ", targets.scalar_type(),
              "; expected int64");
  check_device_supported(logits, op, "logits");
  check_same_device(targets, logits, op, "targets", "logits");
}

// CPU only: on CUDA this would synchronise (see cross_entropy.h).
void check_targets_in_range_cpu(const torch::Tensor& targets, int64_t valid_vocab) {  // (N) int64, contiguous
  const int64_t* t = targets.data_ptr<int64_t>();
  for (int64_t i = 0; i < targets.numel(); ++i)
    TORCH_CHECK(t[i] >= 0 && t[i] < valid_vocab, "cross_entropy_loss_and_grad_over_logits: targets[", i,
                "] = ", t[i], " is outside [0, valid_vocab = ", valid_vocab, ")");
}

// ---- CPU rows --------------------------------------------------------------------------
// The *_rows function runs a range of rows, one thread's share, built once
// per ISA level (LADDER_CPU_CLONES); the op splits the rows over threads.

// The loss and, over the row itself, its gradient (softmax - onehot(t)) *
// scale over [0, V), 0 over [V, Vp): one exp per logit. The row's exp(x - max)
// wait in `e` (V floats, in cache) for the gradient pass, which scales them by
// 1 / sum; the target logit is read before the row is overwritten.
template <typename T>
LADDER_CPU_CLONES void cross_entropy_loss_and_grad_rows(int64_t begin, int64_t end, T* logits,
                                                        const int64_t* targets, float* losses, float* lse,
                                                        float scale, int64_t Vp, int64_t V) {
  std::vector<float> e(size_t(V), 0.f);
  float* __restrict__ ev = e.data();
  for (int64_t row = begin; row < end; ++row) {
    T* __restrict__ x = logits + row * Vp;
    const int64_t t = targets[row];
    const float m = max_over(V, [&](int64_t j) { return to_float(x[j]); });
    const float sum = lane_sum(V, [&](int64_t j) { return ev[j] = exp_approx(to_float(x[j]) - m); });
    lse[row] = m + std::log(sum);
    losses[row] = lse[row] - to_float(x[t]);
    const float r = scale / sum;
    for (int64_t j = 0; j < V; ++j) x[j] = from_float<T>(ev[j] * r);
    for (int64_t j = V; j < Vp; ++j) x[j] = from_float<T>(0.f);
    x[t] = from_float<T>((ev[t] / sum - 1.f) * scale);
  }
}

}  // namespace

// ---- the op ----------------------------------------------------------------------------

namespace {
std::atomic<CrossEntropyKernel> g_cross_entropy_kernel{CrossEntropyKernel::kBatched};
}  // namespace

void set_cross_entropy_kernel(CrossEntropyKernel k) { g_cross_entropy_kernel.store(k); }
CrossEntropyKernel cross_entropy_kernel() { return g_cross_entropy_kernel.load(); }

CrossEntropyKernel parse_cross_entropy_kernel(const std::string& name) {
  if (name == "batched") return CrossEntropyKernel::kBatched;
  if (name == "online") return CrossEntropyKernel::kOnline;
  throw std::invalid_argument("cross-entropy kernel '" + name + "': expected batched or online");
}

torch::Tensor cross_entropy_loss_and_grad_over_logits(const torch::Tensor& logits, const torch::Tensor& targets,
                                                      int64_t valid_vocab) {
  check_cross_entropy_inputs(logits, targets, valid_vocab);
  TORCH_CHECK(logits.is_contiguous() && targets.is_contiguous(),
              "cross_entropy_loss_and_grad_over_logits: logits and targets must be contiguous (the gradient is "
              "written over the logits' own memory)");
  const int64_t N = logits.size(0), Vp = logits.size(1), V = valid_vocab;
  const auto f32 = logits.options().dtype(at::kFloat);
  auto losses = torch::empty({N}, f32);  // (N), freed after the mean
  auto lse = torch::empty({N}, f32);     // (N), each row's logsumexp
  const float scale = 1.f / float(N);
  if (logits.is_cuda()) {
    torch::Tensor loss;
#ifdef LADDER_WITH_CUDA
    const c10::cuda::CUDAGuard guard(logits.device());
    cuda::cross_entropy_loss_and_grad(logits.data_ptr(), elem_type(logits.scalar_type()),
                                      targets.data_ptr<int64_t>(), losses.data_ptr<float>(), lse.data_ptr<float>(),
                                      logits.data_ptr(), scale, N, Vp, V, current_stream(),
                                      cross_entropy_kernel() == CrossEntropyKernel::kBatched);
    loss = losses.mean();
#endif
    return loss;
  }
  check_targets_in_range_cpu(targets, V);
  with_cpu_elem(logits.scalar_type(), [&](auto elem) {
    using T = decltype(elem);
    at::parallel_for(0, N, 1, [&](int64_t begin, int64_t end) {
      cross_entropy_loss_and_grad_rows(begin, end, cpu_data<T>(logits), targets.data_ptr<int64_t>(),
                                       losses.data_ptr<float>(), lse.data_ptr<float>(), scale, Vp, V);
    });
  });
  const float* l = losses.data_ptr<float>();
  double total = 0.0;  // in order, in double: deterministic and exact enough for any N
  for (int64_t i = 0; i < N; ++i) total += l[i];
  return torch::full({}, float(total / double(N)), f32);
}

// ---- reference -------------------------------------------------------------------------

torch::Tensor cross_entropy_reference(const torch::Tensor& logits, const torch::Tensor& targets,
                                      int64_t valid_vocab) {
  auto real = logits.narrow(1, 0, valid_vocab).to(at::kFloat);  // (N, V)
  return at::cross_entropy_loss(real, targets, /*weight=*/{}, at::Reduction::Mean, /*ignore_index=*/-100,
                                /*label_smoothing=*/0.0);
}

void add_loss_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  const double a = double(s.act_bytes), N = double(s.rows()), V = double(s.vocab), Vp = double(s.model_vocab);
  const int64_t m = s.micro_steps;
  if (f.fused_ce) {
    work.memory("loss/fused cross-entropy", Category::kSoftmaxLoss, m, N * V * a + N * 8, N * Vp * a + N * 4);
    return;
  }
  if (V < Vp) {  // logits[..., :V] reshaped: a copy; its backward pads the gradient with zeros
    work.memory("loss/logits' first V columns", Category::kMemcpyMemset, m, N * V * a, N * V * a);
    work.memory("loss/gradient padded to Vp", Category::kMemcpyMemset, m, N * V * a, N * Vp * a);
  }
  // At the logits' dtype: on the H100 under bf16 autocast the loss ran log_softmax on bf16 in and out
  // (cunn_SoftMaxForward<8, BFloat16, float, BFloat16>, 2026-11-27); nll_loss's backward zeroes its (N, V)
  // gradient (a fill: memcpy/memset) and writes the targets' entries.
  work.memory("loss/log_softmax forward", Category::kSoftmaxLoss, m, N * V * a, N * V * a);
  work.memory("loss/nll forward", Category::kSoftmaxLoss, m, N * 8 + N * a, 4);
  work.memory("loss/nll backward zeros", Category::kMemcpyMemset, m, 0, N * V * a);
  work.memory("loss/log_softmax backward", Category::kSoftmaxLoss, m, 2 * N * V * a, N * V * a);
}

}  // namespace ladder::fused
