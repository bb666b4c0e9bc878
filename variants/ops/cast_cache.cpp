// variants/ops/cast_cache.cpp: CastCache (see cast_cache.h).
#include "variants/ops/cast_cache.h"

namespace ladder {

CastCache::CastCache(at::ScalarType dtype) : dtype_(dtype) {}

void CastCache::track(const std::vector<torch::Tensor>& params) {
  params_.clear();
  copies_.clear();
  index_.clear();
  for (const auto& p : params) {
    TORCH_CHECK(p.defined(), "CastCache::track: an undefined parameter");
    if (!p.is_floating_point() || p.scalar_type() == dtype_ || index_.count(p.unsafeGetTensorImpl())) continue;
    index_.emplace(p.unsafeGetTensorImpl(), params_.size());
    params_.push_back(p);
    copies_.push_back(torch::empty(p.sizes(), p.options().dtype(dtype_).requires_grad(false)));
  }
  versions_.assign(params_.size(), 0);
  refresh();
}

void CastCache::refresh() {
  if (params_.empty()) return;
  {
    torch::NoGradGuard no_grad;
    // One multi-tensor launch on CUDA where ATen can (a few for 124M
    // elements), a copy per tensor elsewhere; the same rounding as .to().
    torch::_foreach_copy_(copies_, params_);
  }
  for (size_t i = 0; i < params_.size(); ++i) versions_[i] = params_[i]._version();
  ++refreshes_;
}

torch::Tensor CastCache::find(const torch::Tensor& param, at::ScalarType dtype) const {
  if (dtype != dtype_) return {};
  const auto it = index_.find(param.unsafeGetTensorImpl());
  if (it == index_.end()) return {};
  if (versions_[it->second] != param._version()) {
    stale_.fetch_add(1, std::memory_order_relaxed);
    return {};
  }
  reads_.fetch_add(1, std::memory_order_relaxed);
  return copies_[it->second];
}

CastCache::Stats CastCache::stats() const {
  Stats s;
  s.parameters = int64_t(copies_.size());
  for (const auto& c : copies_) {
    s.elements += c.numel();
    s.bytes += c.numel() * int64_t(c.element_size());
  }
  s.refreshes = refreshes_;
  s.reads = reads_.load();
  s.stale = stale_.load();
  return s;
}

void add_cast_work(const WorkShape& s, const WorkFlags& f, WorkList& work) {
  using profiler::Category;
  if (s.act_bytes != 2) return;
  const double Pb = s.block_linear_params(), Pw = s.wte_params();
  const double N = double(s.rows()), C = double(s.n_embd);
  const int64_t m = s.micro_steps, L = s.n_layer;
  const bool blocks_cached = f.cast_cache && f.fused_linear, wte_cached = f.cast_cache && f.fused_ce;
  if (blocks_cached || wte_cached) {
    const double P = (blocks_cached ? Pb : 0) + (wte_cached ? Pw : 0);
    work.memory("optimizer/bf16 weight copies", Category::kOptimizer, 1, P * 4, P * 2);
  }
  if (!blocks_cached)
    work.memory("cast/block weights to bf16", Category::kMemcpyMemset, m * f.block_forwards(), Pb * 4, Pb * 2);
  if (!wte_cached) work.memory("cast/wte to bf16", Category::kMemcpyMemset, m, Pw * 4, Pw * 2);
  if (!(f.grads_into_buffers && f.fused_linear))
    work.memory("cast/block weight grads to fp32", Category::kMemcpyMemset, m, Pb * 2, Pb * 4);
  if (!(f.grads_into_buffers && f.fused_ce))
    work.memory("cast/wte grad to fp32", Category::kMemcpyMemset, m, Pw * 2, Pw * 4);
  if (!f.fused_ln) {  // ln_1, ln_2 (each block), ln_f: fp32 out, the next matmul reads bf16
    work.memory("cast/ln output to bf16", Category::kMemcpyMemset, (2 * L * f.block_forwards() + 1) * m, N * C * 4,
                N * C * 2);
    work.memory("cast/ln output grad to fp32", Category::kMemcpyMemset, (2 * L + 1) * m, N * C * 2, N * C * 4);
  }
}

}  // namespace ladder
