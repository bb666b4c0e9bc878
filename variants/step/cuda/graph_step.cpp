// variants/step/cuda/graph_step.cpp: the CUDA-graph adapter (see graph_step.h).
#include "variants/step/graph_step.h"

#include <map>
#include <mutex>

#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

namespace ladder {

namespace {

// One side stream per device for every capture of the process, as
// torch.cuda.graph's default capture stream: what is made lazily per stream
// (cuBLAS's workspace for the stream) is made once, in the first capture's
// warm-up, and a later capture that runs no warm-up of its own (the last
// micro-step of accumulation) finds it there instead of allocating it inside
// the graph.
c10::cuda::CUDAStream capture_stream(c10::DeviceIndex device) {
  static std::mutex mu;
  static std::map<c10::DeviceIndex, c10::cuda::CUDAStream> streams;
  std::lock_guard<std::mutex> lock(mu);
  auto it = streams.find(device);
  if (it == streams.end())
    it = streams.emplace(device, c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device)).first;
  return it->second;
}

class CudaGraphStep final : public GraphedStep {
 public:
  CudaGraphStep(const StepFn& warmup, int warmup_runs, const StepFn& body, const torch::Tensor& x,
                const torch::Tensor& y, GraphPoolId pool)
      : static_x_(x.clone()), static_y_(y.clone()) {
    // Capture must not run on the legacy default stream; warm up there first
    // so lazy initialisation (cuBLAS handles, workspaces) happens outside it.
    const auto device = x.device().index();
    auto main_stream = c10::cuda::getCurrentCUDAStream(device);
    auto side = capture_stream(device);
    at::cuda::CUDAEvent ready;
    ready.record(main_stream);
    ready.block(side);  // the side stream waits for work already queued
    {
      c10::cuda::CUDAStreamGuard guard(side);
      for (int i = 0; i < warmup_runs; ++i) warmup(static_x_, static_y_);
      // The warm-up's activations are free now but cached; the capture
      // allocates its own in the graph's private pool. Without this the
      // process would hold a step's activations twice.
      side.synchronize();
      c10::cuda::CUDACachingAllocator::emptyCache();
      // Autocast's weight cast cache would hold tensors made during capture.
      const bool cache = at::autocast::is_autocast_cache_enabled();
      at::autocast::set_autocast_cache_enabled(false);
      // Thread-local: the data producer (variants/data/prefetch.h) may allocate
      // pinned memory on its own thread meanwhile, which global mode would
      // turn into a failed capture. The autograd engine's device thread
      // still launches backward's kernels into the capturing stream.
      graph_.capture_begin(pool, cudaStreamCaptureModeThreadLocal);
      try {
        static_outputs_ = body(static_x_, static_y_);
      } catch (...) {
        // End the capture before the error leaves: otherwise the capture
        // stream stays in capture mode and every later launch on it fails.
        // Ending an invalidated capture throws too (the body's error is the
        // one to report), and in PyTorch 2.11 it throws before it tells the
        // allocator the capture is over: do that here, or a later
        // emptyCache() would trip over a capture still "underway". When
        // capture_end() got that far itself, the second call throws, caught.
        try {
          graph_.capture_end();
        } catch (const std::exception&) {
          try {
            c10::cuda::CUDACachingAllocator::endAllocateToPool(device, pool);
          } catch (const std::exception&) {
          }
        }
        at::autocast::set_autocast_cache_enabled(cache);
        throw;
      }
      graph_.capture_end();
      at::autocast::set_autocast_cache_enabled(cache);
    }
    at::cuda::CUDAEvent captured;
    captured.record(side);
    captured.block(main_stream);
  }

  std::vector<torch::Tensor> run(const torch::Tensor& x, const torch::Tensor& y) override {
    static_x_.copy_(x, /*non_blocking=*/true);
    static_y_.copy_(y, /*non_blocking=*/true);
    graph_.replay();
    return static_outputs_;
  }

 private:
  torch::Tensor static_x_, static_y_;
  std::vector<torch::Tensor> static_outputs_;
  at::cuda::CUDAGraph graph_;
};

}  // namespace

GraphPoolId new_graph_pool() { return at::cuda::graph_pool_handle(); }

std::unique_ptr<GraphedStep> capture_step(const StepFn& warmup, int warmup_runs, const StepFn& body,
                                          const torch::Tensor& x, const torch::Tensor& y, GraphPoolId pool) {
  TORCH_CHECK(x.is_cuda(), "capture_step: CUDA graphs need CUDA tensors, got ", x.device());
  return std::make_unique<CudaGraphStep>(warmup, warmup_runs, body, x, y, pool);
}

}  // namespace ladder
