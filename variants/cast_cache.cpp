// variants/cast_cache.cpp: CastCache (see cast_cache.h).
#include "variants/cast_cache.h"

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

}  // namespace ladder
