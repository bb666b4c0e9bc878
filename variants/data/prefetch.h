// variants/data/prefetch.h: produce the next batch while the step computes.
//
// PrefetchingSource wraps any TokenSource. In background mode a producer
// thread makes batch (0, 0) from the start, then the batch the step will ask
// for next (the next micro-step, or micro-step 0 of the next step) as soon as
// the current one is handed over, so its cost overlaps the forward, backward
// and optimizer phases; the step's data phase then only picks up a ready
// batch (and, on CUDA, issues its non_blocking copy from pinned memory). A
// request that was not predicted (a jump in steps) waits for the producer to
// go idle and has it make that batch instead. In synchronous mode each batch
// is made on the caller's thread when asked: the baseline that data time is
// compared against.
// Either way the wrapper counts what was consumed, rethrows a producer's
// exception (with its type, so a bad token id stays a ConfigError) when that
// batch is requested, and can report its events to a listener (tests check
// the overlap by the order of events, never by time). Nothing here reads a
// clock: the harness times the data phase.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "variants/data/data.h"

namespace ladder {

struct PrefetchEvent {
  enum Kind { kProduceBegin, kProduceEnd, kHandOver };
  Kind kind;
  int64_t step, micro;
};
// Called from the producer thread (produce events) and the caller's thread
// (hand-over); the listener synchronises itself.
using PrefetchListener = std::function<void(const PrefetchEvent&)>;

// micro_steps: micro-steps per optimizer step, to predict the next request.
// device: where the batches go. On CUDA the producer thread makes that
// device current (the creating thread's current one for a bare "cuda"), so
// its pinned allocations never create a context on GPU 0 of a process that
// runs on another.
std::unique_ptr<TokenSource> make_prefetching_source(std::unique_ptr<TokenSource> inner,
                                                     int64_t micro_steps, bool background,
                                                     PrefetchListener listener = {},
                                                     const torch::Device& device = torch::kCPU);

}  // namespace ladder
