// bench/measure/harness/step_metrics.cpp: every per-step metric, declared once (see step_metrics.h).
#include "bench/measure/harness/step_metrics.h"

namespace ladder {

namespace {
using R = const StepRecord&;
using C = const MetricContext&;
bool comm(R s, C) { return s.has_comm; }
bool memory(R s, C) { return s.has_memory; }
bool gather(R s, C) { return s.has_gather; }
bool traffic(R s, C) { return s.has_traffic; }
bool net(R s, C) { return s.has_traffic && s.net_tx_bytes >= 0; }
bool cuda_memory(R s, C) { return s.has_memory && s.memory.cuda; }
bool allocated(R s, C) { return s.has_memory && s.memory.allocated_measured(); }
}  // namespace

const std::vector<StepMetric>& step_metrics() {
  static const std::vector<StepMetric> kMetrics = {
      {"dt_ms", "step time: the timed optimizer step, all micro-steps", true, false, nullptr,
       [](R s, C) { return s.dt_ms; }, RankScope::kAcrossRanks, Range::kPositive},
      {"tokens_per_s", "tokens of the step, all ranks, over dt", true, false, nullptr,
       [](R s, C) { return s.tokens_per_s; }},
      {"tokens_per_s_per_device", "tokens_per_s over the ranks", true, false, nullptr,
       [](R s, C c) { return s.tokens_per_s / c.world_size; }, RankScope::kAcrossRanks},
      {"loss", "mean loss over the step's tokens", true, false, nullptr, [](R s, C) { return s.loss; },
       RankScope::kNone, Range::kNullable},
      {"grad_norm", "global L2 norm of the gradients before clipping", true, false, nullptr,
       [](R s, C) { return s.grad_norm; }, RankScope::kNone, Range::kNullable},
      {"lr", "learning rate of the step", false, false, nullptr, [](R s, C) { return s.lr; }},
      // What MFU divides by a peak: the model's FLOPs (bench/measure/roofline/mfu.h) per second.
      {"model_tflops", "model TFLOP/s achieved: the step's tokens x FLOPs per token over dt", true, false,
       [](R, C c) { return c.flops_per_token > 0; },
       [](R s, C c) { return double(s.tokens) * double(c.flops_per_token) / (s.dt_ms * 1e-3) / 1e12; },
       RankScope::kNone, Range::kNonNegative},
      {"data_ms", "host time in the data phase, summed over micro-steps", true, false, nullptr,
       [](R s, C) { return s.data_ms; }, RankScope::kNone, Range::kNonNegative},
      {"allreduce_ms", "ddp: wall time some gradient bucket was in flight", true, false, comm,
       [](R s, C) { return s.allreduce_ms; }, RankScope::kAcrossRanks},
      {"allreduce_exposed_ms", "ddp: in flight after backward's compute ended", true, false, comm,
       [](R s, C) { return s.allreduce_exposed_ms; }, RankScope::kPerRank},
      {"allreduce_overlap_pct", "ddp: share of allreduce_ms hidden behind backward", true, false, comm,
       [](R s, C) { return s.overlap_pct; }, RankScope::kAcrossRanks},
      {"allreduce_pct_of_dt", "ddp: allreduce_ms as a share of dt", true, false, comm,
       [](R s, C) { return 100.0 * s.allreduce_ms / s.dt_ms; }, RankScope::kAcrossRanks},
      {"allreduce_bytes", "ddp: gradient bytes all-reduced", false, true, comm,
       [](R s, C) { return double(s.allreduce_bytes); }, RankScope::kNone, Range::kNonNegative},
      {"allreduce_buckets", "ddp: buckets all-reduced", false, true, comm, [](R s, C) { return double(s.buckets); },
       RankScope::kNone, Range::kNonNegative},
      {"gather_ms", "ddp+zero1: host time of the parameter gather (broadcasts), launch to completion; exposed",
       true, false, gather, [](R s, C) { return s.gather_ms; }, RankScope::kAcrossRanks, Range::kNonNegative},
      {"gather_bytes", "ddp+zero1: parameter bytes gathered (broadcast from their owners)", false, true, gather,
       [](R s, C) { return double(s.gather_bytes); }, RankScope::kPerRank, Range::kNonNegative},
      {"collective_payload_bytes", "ddp: payload this rank handed to collectives in the step", false, true, traffic,
       [](R s, C) { return double(s.collective_payload_bytes); }, RankScope::kPerRank, Range::kNonNegative},
      {"sent_bytes_ring", "ddp: bytes a ring sends from this rank for the step's collectives", false, true, traffic,
       [](R s, C) { return double(s.sent_bytes_ring); }, RankScope::kAcrossRanks, Range::kNonNegative},
      {"net_tx_bytes", "ddp: bytes out of this host's network interfaces in the step, loopback excluded", false,
       true, net, [](R s, C) { return double(s.net_tx_bytes); }, RankScope::kAcrossRanks},
      {"net_rx_bytes", "ddp: bytes into this host's network interfaces in the step, loopback excluded", false,
       true, net, [](R s, C) { return double(s.net_rx_bytes); }, RankScope::kPerRank},
      {"peak_rss_bytes", "the process's peak resident memory in the step", false, true, memory,
       [](R s, C) { return double(s.memory.peak_rss_bytes); }, RankScope::kNone, Range::kNonNegative},
      {"peak_active_bytes", "CUDA: peak active bytes in the step", false, true, cuda_memory,
       [](R s, C) { return double(s.memory.peak_active_bytes); }, RankScope::kNone, Range::kNonNegative},
      {"peak_reserved_bytes", "CUDA: peak reserved bytes in the step", false, true, cuda_memory,
       [](R s, C) { return double(s.memory.peak_reserved_bytes); }, RankScope::kNone, Range::kNonNegative},
      {"peak_allocated_bytes", "peak bytes of live tensor storage in the step (CUDA's allocator, or the CPU's counted)",
       false, true, allocated,
       [](R s, C) { return double(s.memory.peak_allocated_bytes); }, RankScope::kNone, Range::kNonNegative},
      {"alloc_retries", "CUDA: allocator retries in the step", false, true, cuda_memory,
       [](R s, C) { return double(s.memory.alloc_retries); }, RankScope::kNone, Range::kNonNegative},
      {"ooms", "CUDA: out-of-memory errors in the step", false, true, cuda_memory,
       [](R s, C) { return double(s.memory.ooms); }, RankScope::kNone, Range::kNonNegative},
  };
  return kMetrics;
}

}  // namespace ladder
