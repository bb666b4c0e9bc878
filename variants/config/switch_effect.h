// variants/config/switch_effect.h: what a switch did in a step, the report's
// switches.<name>: a SwitchDecl's describe() returns one (switch_decl.h), the
// step gathers one per switch (TrainStep::describe_switches), and the report
// holds them as they are (reports/model/report/rung_report.h). The fields
// below are the entry's JSON, its strict reading back and its schema
// (profiler/common/fields.h), so a reader names a field, never a key.
//
// A switch that is off says only that (enabled false, and the reason); one
// that is on says whether it took effect, by what mechanism and why; what it
// adds beyond that is a typed section of its own (a group's fusions, the
// flash rung's SDPA backend, the ddp rung's buckets, ...).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "profiler/common/fields.h"

namespace ladder {

// A part of a group that added no fusion, and why.
struct FusionNotUsed {
  std::string name, reason;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("name", s.name);
    v("reason", s.reason);
  }
};

// fused-ln on CUDA: its kernels' launches (variants/ops/add_layer_norm/).
struct LayerNormKernelLaunches {
  int64_t vector = 0, row = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("vector", s.vector, fields::Doc().min(0));
    v("row", s.row, fields::Doc().min(0));
  }
};
struct LayerNormKernels {
  std::string asked;  // --layer-norm-kernel
  LayerNormKernelLaunches forward, backward;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("asked", s.asked, "--layer-norm-kernel");
    v("forward", s.forward);
    v("backward", s.backward);
  }
};

// cast-cache: its bf16 copies (variants/ops/cast_cache.h).
struct CastCacheFacts {
  int64_t parameters = 0, copy_bytes = 0, refreshes = 0, reads = 0, cast_afresh = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("parameters", s.parameters, fields::Doc().min(0));
    v("copy_bytes", s.copy_bytes, fields::Doc().min(0));
    v("refreshes", s.refreshes, fields::Doc().min(0));
    v("reads", s.reads, fields::Doc().min(0));
    v("cast_afresh", s.cast_afresh, fields::Doc("reads that found a weight changed since the refresh").min(0));
  }
};

// cuda-graph: its launches (variants/step/graph_step.h).
struct CudaGraphFacts {
  bool optimizer_in_graph = false;
  int64_t graph_launches_per_step = 0, graph_launches_total = 0, steps_total = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("optimizer_in_graph", s.optimizer_in_graph);
    v("graph_launches_per_step", s.graph_launches_per_step, fields::Doc().min(0));
    v("graph_launches_total", s.graph_launches_total, fields::Doc().min(0));
    v("steps_total", s.steps_total, fields::Doc().min(0));
  }
};

// ddp: its gradient buckets (variants/ddp/grad_sync.h).
struct GradSyncBucket {
  int64_t bytes = 0, n_params = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("bytes", s.bytes, fields::Doc().min(0));
    v("n_params", s.n_params, fields::Doc().min(0));
  }
};
struct GradSyncFacts {
  std::string mechanism, bucket_order;
  int64_t bucket_cap_bytes = 0, first_bucket_cap_bytes = 0;
  bool gradient_as_bucket_view = false;
  std::vector<GradSyncBucket> buckets;
  std::vector<std::string> first_sync_event_order;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("mechanism", s.mechanism);
    v("bucket_cap_bytes", s.bucket_cap_bytes, fields::Doc().min(0));
    v("first_bucket_cap_bytes", s.first_bucket_cap_bytes, fields::Doc().min(0));
    v("bucket_order", s.bucket_order);
    v("gradient_as_bucket_view", s.gradient_as_bucket_view);
    v("buckets", s.buckets);
    v("first_sync_event_order", s.first_sync_event_order,
      "the first step's hooks in the order they ran: each parameter ready, each bucket launched");
  }
};

// zero1: the optimizer state's shards (variants/ddp/zero1.h).
struct Zero1Shard {
  int64_t rank = 0, elements = 0, pieces = 0, parameter_bytes = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("rank", s.rank, fields::Doc().min(0));
    v("elements", s.elements, fields::Doc().min(0));
    v("pieces", s.pieces, fields::Doc().min(0));
    v("parameter_bytes", s.parameter_bytes, fields::Doc().min(0));
  }
};
struct Zero1Sharding {
  int64_t ranks = 0;
  std::vector<Zero1Shard> shards;
  int64_t optimizer_state_bytes_this_rank = 0, optimizer_state_bytes_unsharded = 0,
          parameter_bytes_broadcast_per_step = 0;
  std::string placement, gradients;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("ranks", s.ranks, fields::Doc().min(1));
    v("shards", s.shards);
    v("optimizer_state_bytes_this_rank", s.optimizer_state_bytes_this_rank, fields::Doc().min(0));
    v("optimizer_state_bytes_unsharded", s.optimizer_state_bytes_unsharded, fields::Doc().min(0));
    v("parameter_bytes_broadcast_per_step", s.parameter_bytes_broadcast_per_step, fields::Doc().min(0));
    v("placement", s.placement);
    v("gradients", s.gradients);
  }
};

struct SwitchEffect {
  bool enabled = false;
  // Present when enabled (schema_extra): read them through took_effect()
  // and mechanism_or_none(), never as a bool (a Maybe's bool is its presence).
  fields::Maybe<bool> effective;
  fields::Maybe<std::string> mechanism;
  std::string reason;
  // false: on, but it cannot act in this step, and reason says why.
  fields::Maybe<bool> applicable;
  fields::Maybe<std::string> sdpa_backend;  // flash
  fields::Maybe<std::string> kernel;        // fused-ce on CUDA: --cross-entropy-kernel
  fields::Maybe<LayerNormKernels> kernels;  // fused-ln on CUDA
  fields::Maybe<std::vector<std::string>> fusions;          // a part of a group: what it fuses
  fields::Maybe<std::vector<std::string>> fusions_active;   // a group: its parts' fusions that acted
  fields::Maybe<std::vector<FusionNotUsed>> fusions_not_used;  // a group: its parts that did not
  fields::Maybe<CastCacheFacts> cast_cache;
  fields::Maybe<CudaGraphFacts> cuda_graph;
  fields::Maybe<GradSyncFacts> grad_sync;
  fields::Maybe<Zero1Sharding> sharding;

  // A switch that is on: whether it took effect, how, and why.
  static SwitchEffect on(bool effective, std::string mechanism, std::string reason);
  // A switch that is on but cannot act here (applicable false), and why.
  static SwitchEffect cannot_act(std::string mechanism, std::string reason);
  // A switch that is off.
  static SwitchEffect off(std::string reason);

  bool took_effect() const { return enabled && effective.value_or(false); }
  // Not applicable: on, but nothing it could act on in this step.
  bool inapplicable() const { return !applicable.value_or(true); }

  template <class S, class V>
  static void fields(S& s, V& v);
  // A switch that is on says whether it took effect and how.
  static void schema_extra(nlohmann::json& schema);
};

// report.switches: one entry per declared switch, under its name.
using SwitchEffects = std::map<std::string, SwitchEffect>;
// Whether the switch of that name is on and took effect (false where the
// effects have no entry for it).
bool took_effect(const SwitchEffects& effects, const std::string& name);

template <class S, class V>
void SwitchEffect::fields(S& s, V& v) {
  v("enabled", s.enabled);
  v("effective", s.effective);
  v("mechanism", s.mechanism);
  v("reason", s.reason);
  v("applicable", s.applicable,
    "false: the switch is on but cannot act in this step, and reason says why: a CUDA-only part or a precision the "
    "CPU lacks, a part that needs a switch off in this rung, one the rung stands down (variants/switches/switch.h "
    "StepPlan::stand_down), data parallelism on one rank");
  v("sdpa_backend", s.sdpa_backend,
    fields::Doc("the SDPA backend that ran; none where the attention plan chose the explicit attention")
        .one_of({"none", "flash", "efficient", "cudnn", "math", "overrideable", "error"}));
  v("kernel", s.kernel, "fused-ce on CUDA: the classifier kernel that ran (--cross-entropy-kernel)");
  v("kernels", s.kernels, "fused-ln on CUDA: the kernels asked for and each one's launches");
  v("fusions", s.fusions, "a part of a group: the fusions it adds to the group's fusions_active");
  v("fusions_active", s.fusions_active);
  v("fusions_not_used", s.fusions_not_used);
  v("cast_cache", s.cast_cache);
  v("cuda_graph", s.cuda_graph);
  v("grad_sync", s.grad_sync, "the ddp rung's gradient buckets and the first step's hook order");
  v("sharding", s.sharding, "zero1: each rank's shard of the optimizer state");
}

}  // namespace ladder
