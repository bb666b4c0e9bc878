// profiler/ranges/layer_ranges.cpp: the identity node that bounds per-layer backward
// ranges (see layer_ranges.h).
#include "profiler/ranges/layer_ranges.h"

#include "profiler/ranges/range.h"

namespace ladder::profiler {

namespace {
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct LayerBoundary : public torch::autograd::Function<LayerBoundary> {
  static variable_list forward(AutogradContext* ctx, at::TensorList xs, int64_t close_layer,
                               int64_t open_layer) {
    ctx->saved_data["close"] = close_layer;
    ctx->saved_data["open"] = open_layer;
    return variable_list(xs.begin(), xs.end());
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    if (ctx->saved_data["close"].toInt() >= 0) end_range();
    const int64_t open = ctx->saved_data["open"].toInt();
    if (open >= 0) begin_range(names::layer(open));
    // One gradient per tensor in xs, then none for the two integers.
    grads.emplace_back();
    grads.emplace_back();
    return grads;
  }
};
}  // namespace

std::vector<torch::Tensor> layer_boundary(const std::vector<torch::Tensor>& xs, int64_t close_layer,
                                          int64_t open_layer) {
  return LayerBoundary::apply(at::TensorList(xs), close_layer, open_layer);
}

}  // namespace ladder::profiler
