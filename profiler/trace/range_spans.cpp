// profiler/trace/range_spans.cpp: see range_spans.h.
#include "profiler/trace/range_spans.h"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <utility>

#include <ATen/record_function.h>

#include "profiler/trace/op_categories.h"

namespace ladder::profiler {

namespace {

// The one listening LayerSpans (the callbacks are plain functions).
std::atomic<LayerSpans*> g_layer_listener{nullptr};

struct OpenedLayer : at::ObserverContext {
  explicit OpenedLayer(int64_t t) : began(t) {}
  int64_t began;
};

std::unique_ptr<at::ObserverContext> layer_begins(const at::RecordFunction& fn) {
  LayerSpans* l = g_layer_listener.load();
  if (!l || !is_layer_range_name(fn.name())) return nullptr;
  return std::make_unique<OpenedLayer>(l->now());
}

void layer_ends(const at::RecordFunction& fn, at::ObserverContext* ctx) {
  LayerSpans* l = g_layer_listener.load();
  if (!l || !ctx) return;
  l->add({fn.name(), static_cast<OpenedLayer*>(ctx)->began, l->now()});
}

}  // namespace

LayerSpans::LayerSpans(std::function<int64_t()> now) : now_(std::move(now)) {
  LayerSpans* none = nullptr;
  if (!g_layer_listener.compare_exchange_strong(none, this))
    throw std::logic_error("LayerSpans: another one is listening; one at a time");
  handle_ = at::addGlobalCallback(at::RecordFunctionCallback(layer_begins, layer_ends).scopes({at::RecordScope::USER_SCOPE}));
}

// Called after the steps, when every thread that opened ranges is idle (the
// device synchronised, the autograd thread waiting for work).
LayerSpans::~LayerSpans() {
  at::removeCallback(handle_);
  g_layer_listener.store(nullptr);
}

std::vector<RangeSpan> LayerSpans::spans() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spans_;
}

void LayerSpans::add(RangeSpan s) {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back(std::move(s));
}

}  // namespace ladder::profiler
