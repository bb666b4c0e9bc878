// variants/ops/grad_buffer.cpp: FlatGradients (see grad_buffer.h).
#include "variants/ops/grad_buffer.h"

#include <algorithm>
#include <mutex>

namespace ladder {

torch::Tensor clip_coefficient(const torch::Tensor& norm, double max_norm) {
  return torch::clamp(max_norm / (norm + 1e-6), c10::nullopt, 1.0);
}

namespace {

// A CPU norm's row: long enough that a row's fp32 sum costs nothing extra,
// short enough that its rounding stays near one ulp (2.6e-8 relative at
// wte's 38.6M values against 2.7e-3 for one fp32 norm over them).
constexpr int64_t kNormRow = 16384;

// t's values as the L2 norms of rows of kNormRow (then the tail's), fp32
// each, appended to `out`.
void append_row_norms(const torch::Tensor& t, std::vector<torch::Tensor>& out) {
  const auto flat = t.contiguous().view({-1});
  const int64_t n = flat.numel(), rows = n / kNormRow, body = rows * kNormRow;
  if (rows > 0)
    out.push_back(torch::linalg_vector_norm(flat.narrow(0, 0, body).view({rows, kNormRow}), 2, {1}));  // (rows)
  if (n > body) out.push_back(torch::linalg_vector_norm(flat.narrow(0, body, n - body), 2).view({1}));  // (1)
}

}  // namespace

torch::Tensor global_grad_norm(const std::vector<torch::Tensor>& grads) {
  torch::NoGradGuard no_grad;
  if (grads.empty()) return torch::zeros({});
  if (!grads[0].is_cpu()) return torch::linalg_vector_norm(torch::stack(torch::_foreach_norm(grads, 2)), 2);  // ()
  std::vector<torch::Tensor> parts;
  for (const auto& g : grads) append_row_norms(g, parts);
  return torch::linalg_vector_norm(torch::cat(parts).to(at::kDouble), 2).to(grads[0].scalar_type());  // ()
}

FlatGradients::FlatGradients(const std::vector<torch::Tensor>& params) : params_(params) {
  TORCH_CHECK(!params_.empty(), "FlatGradients: no parameters");
  const auto options = params_[0].options();
  int64_t total = 0;
  for (const auto& p : params_) {
    TORCH_CHECK(p.device() == options.device() && p.scalar_type() == options.dtype().toScalarType(),
                "FlatGradients: parameters on ", options.device(), " ", options.dtype(), " and ", p.device(), " ",
                p.scalar_type(), "; expected one device and dtype");
    offsets_.push_back(total);
    total += (p.numel() + kAlignElements - 1) / kAlignElements * kAlignElements;
  }
  buffer_ = torch::zeros({total}, options.requires_grad(false));  // (total)
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params_.size(); ++i) {
    auto& p = params_[i];
    p.mutable_grad() = buffer_.narrow(0, offsets_[i], p.numel()).view(p.sizes());
    grads_.push_back(p.grad());
  }
}

namespace {
// Every live FirstWrites, for FirstWrites::of (one per flat buffer: one a step).
std::mutex g_first_writes_mutex;
std::vector<std::weak_ptr<FirstWrites>> g_first_writes;
}  // namespace

bool FirstWrites::claim(const torch::Tensor& grad) {
  const auto it = owned_.find(grad.data_ptr());
  if (it == owned_.end() || written_[it->second]) return false;
  written_[it->second] = 1;
  return true;
}

std::shared_ptr<FirstWrites> FirstWrites::of(const torch::Tensor& grad) {
  if (!grad.defined() || !grad.is_cpu()) return nullptr;
  const auto* p = static_cast<const char*>(grad.data_ptr());
  std::lock_guard<std::mutex> lock(g_first_writes_mutex);
  for (const auto& weak : g_first_writes)
    if (auto fw = weak.lock(); fw && p >= fw->begin_ && p < fw->end_) return fw;
  return nullptr;
}

void FlatGradients::write_first(const std::vector<torch::Tensor>& owned) {
  TORCH_CHECK(buffer_.is_cpu(), "FlatGradients::write_first: first writes are for a CPU buffer");
  auto fw = std::make_shared<FirstWrites>();
  fw->begin_ = static_cast<const char*>(buffer_.data_ptr());
  fw->end_ = fw->begin_ + buffer_.numel() * buffer_.element_size();
  for (const auto& o : owned) {
    const auto it = std::find_if(params_.begin(), params_.end(),
                                 [&](const torch::Tensor& p) { return p.is_same(o); });
    TORCH_CHECK(it != params_.end(), "FlatGradients::write_first: a parameter of ", o.sizes(),
                " is not one of the buffer's");
    const auto i = size_t(it - params_.begin());
    fw->owned_.emplace(grads_[i].data_ptr(), fw->written_.size());
    fw->written_.push_back(1);  // the buffer starts zeroed: the first step's writes may add
  }
  first_writes_ = fw;
  std::lock_guard<std::mutex> lock(g_first_writes_mutex);
  g_first_writes.erase(std::remove_if(g_first_writes.begin(), g_first_writes.end(),
                                      [](const std::weak_ptr<FirstWrites>& w) { return w.expired(); }),
                       g_first_writes.end());
  g_first_writes.push_back(fw);
}

void FlatGradients::zero() {
  if (!first_writes_) {
    buffer_.zero_();
    return;
  }
  torch::NoGradGuard no_grad;
  for (const auto& g : grads_)
    if (!first_writes_->owns(g)) g.zero_();
  std::fill(first_writes_->written_.begin(), first_writes_->written_.end(), 0);
}

void FlatGradients::check_first_writes() const {
  if (!first_writes_) return;
  const auto& w = first_writes_->written_;
  const auto missing = std::count(w.begin(), w.end(), 0);
  TORCH_CHECK(missing == 0, "FlatGradients: ", missing, " of the ", w.size(),
              " gradients the fused ops write were not written since the buffer was last zeroed; their old "
              "values would reach the optimizer");
}

torch::Tensor FlatGradients::norm() const {
  // On a CPU the buffer as one tensor: its rows cross the views' bounds, and
  // the gaps between them are zeros.
  return global_grad_norm(buffer_.is_cpu() ? std::vector<torch::Tensor>{buffer_} : grads_);  // ()
}

torch::Tensor FlatGradients::clip(double max_norm) {
  torch::NoGradGuard no_grad;
  auto norm = this->norm();  // ()
  buffer_.mul_(clip_coefficient(norm, max_norm));
  return norm;
}

std::pair<torch::Tensor, torch::Tensor> FlatGradients::clip_divisor(double max_norm) const {
  torch::NoGradGuard no_grad;
  auto norm = this->norm();  // ()
  // grad / divisor is grad * clip_coefficient up to rounding; exactly 1 (no
  // clip) below max_norm.
  return {norm, clip_coefficient(norm, max_norm).reciprocal()};
}

bool FlatGradients::intact() const {
  const auto* base = static_cast<const char*>(buffer_.data_ptr());
  const int64_t item = buffer_.element_size();
  for (size_t i = 0; i < params_.size(); ++i) {
    const auto& g = params_[i].grad();
    if (!g.defined() || g.data_ptr() != base + offsets_[i] * item) return false;
  }
  return true;
}

void add_gradient_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  const double P = double(f.n_params), Pw = s.wte_params();
  const int64_t m = s.micro_steps;
  const bool persistent = f.flat_grads || f.world > 1;  // .grad stays between steps and is zeroed
  // Summed where both of wte's gradients reach autograd: the lm_head's and the embedding's.
  const bool lm_head_into = f.grads_into_buffers && f.fused_ce;
  if (!lm_head_into && !f.embedding_into_grad)
    work.memory("embedding.wte/tied gradients summed", Category::kElementwiseNorm, m, 2 * Pw * 4, Pw * 4);
  // What autograd hands to AccumulateGrad: all but what the fused ops add into the buffer themselves.
  const double handed = P - (f.grads_into_buffers && f.fused_linear ? s.block_linear_params() : 0) -
                        (lm_head_into && f.embedding_into_grad ? Pw : 0);
  if (const int64_t adds = persistent ? m : m - 1; adds > 0)
    work.memory("grads/accumulated into .grad", Category::kElementwiseNorm, adds, 2 * handed * 4, handed * 4);
  // The zeroing is a fill kernel: in the optimizer phase unless a graph replays it (then by its name, a fill).
  const Category zero_band = f.optimizer_in_graph ? Category::kMemcpyMemset : Category::kOptimizer;
  // With first writes the fused ops' own segments are not zeroed (FirstWrites).
  const double own = f.first_writes ? (f.fused_linear ? s.block_linear_params() : 0) + (f.fused_ce ? Pw : 0) : 0;
  if (persistent) work.memory("optimizer/zero grads", zero_band, 1, 0, (P - own) * 4);
}

}  // namespace ladder
