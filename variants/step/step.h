// variants/step/step.h: the one GPT-2 training step every rung runs.
//
// A step is four phases (variants/step/phases.h): data, forward, backward,
// optimizer; with gradient accumulation the first three repeat per
// micro-step. The rung's plan (variants/switches/switch.h: StepPlan) selects
// how each phase is done; nothing else differs between rungs. The step never
// reads a clock: it names the step and its phases as ranges
// (profiler/ranges/range.h: NVTX for Nsight, RecordFunction for Kineto traces), as
// llm.c's NVTX_RANGE_FN does, announces phase boundaries to a PhaseObserver
// and, on the ddp rung, its all-reduce to a CommObserver
// (variants/ddp/comm_observer.h); who listens is not its business. Results
// stay on the device as tensors so the step adds no synchronisation.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include <nlohmann/json_fwd.hpp>
#include <torch/torch.h>

#include "variants/planners/attention_candidates.h"
#include "variants/planners/attention_plan.h"
#include "variants/ops/cast_cache.h"
#include "variants/config/config.h"
#include "variants/data/data.h"
#include "variants/fused_linear/fused_linear.h"
#include "variants/planners/gemm_plan_section.h"
#include "variants/ddp/comm_observer.h"
#include "variants/ddp/process_group.h"
#include "variants/ops/grad_buffer.h"
#include "variants/step/graph_step.h"
#include "variants/model/model.h"
#include "variants/optim/optim.h"
#include "variants/step/phases.h"
#include "variants/config/precision.h"
#include "variants/switches/switch.h"

namespace ladder {

class GradientSync;      // variants/ddp/grad_sync.h
class ShardedOptimizer;  // variants/ddp/zero1.h

struct StepOutput {
  torch::Tensor loss;       // () float32, mean over the step's tokens (all micro-steps)
  torch::Tensor grad_norm;  // () float32, global L2 norm before clipping
  double lr = 0.0;
  int64_t tokens = 0;       // tokens processed by this step on this rank
};

class TrainStep {
 public:
  // With the ddp switch `pg` is the job's process group: the initial weights
  // are broadcast from rank 0 and gradients are all-reduced during backward
  // (variants/ddp/grad_sync.h). Otherwise pass nullptr.
  TrainStep(const RunConfig& cfg, torch::Device device, std::unique_ptr<TokenSource> data,
            ProcessGroup* pg = nullptr);
  ~TrainStep();

  // Runs optimizer step `step` (0-based, counting warmup steps), announcing
  // its phases to `phases` and the ddp rung's all-reduce to `comm` (nullptr:
  // no one listens).
  StepOutput run(int64_t step, PhaseObserver& phases, CommObserver* comm = nullptr);

  // Averages the step's loss over ranks for reporting (a blocking all-reduce;
  // the harness calls it outside the timed step). A no-op on one process.
  void reduce_for_report(StepOutput& out);

  int world_size() const { return cfg_.world_size; }
  // Whether micro-steps replay a captured CUDA graph (cuda-graph on CUDA, not ddp).
  bool uses_graph() const { return micro_graph_ != nullptr || step_graph_ != nullptr; }
  GPT& model() { return model_; }
  const TokenSource& data() const { return *data_; }
  // What each switch did on this device: effective or not, and why (each
  // switch's describe, variants/switches/); a group sums up its parts.
  SwitchEffects describe_switches() const;
  // What the rung's switches made of the step.
  const StepPlan& plan() const { return plan_; }
  // The GEMM plan of the fused linears (variants/planners/gemm_plan.h), for the
  // report; empty when the rung has none.
  std::optional<GemmPlanSection> describe_gemm_plan() const;
  // The attention plan of the flash rung's SDPA (variants/planners/attention_plan.h),
  // for the report; empty when the rung runs explicit attention.
  const std::optional<AttentionPlan>& attention_plan() const { return attention_plan_; }
  // Whether the step's matmuls run in bf16: the bf16 switch acts and took effect.
  bool matmuls_in_bf16() const { return plan_.acts(switches::bf16) && bf16_effect_.effective; }

  // Keeps a copy of every parameter's gradient of optimizer step `step`,
  // taken after backward and before the clip (what PyTorch's clip_grad_norm_
  // sees), for per-parameter parity (scripts/reference.py parity --grads).
  // Eager steps only: a CUDA graph never returns to the host between
  // backward and the clip, so a graphed step throws.
  void keep_gradients_of_step(int64_t step) { keep_gradients_step_ = step; }
  // (name, gradient) on the CPU, in named_parameters() order; empty until
  // that step has run.
  const std::vector<std::pair<std::string, torch::Tensor>>& kept_gradients() const { return kept_gradients_; }

 private:
  // The constructor's steps, in its order (step.cpp says what each sets up).
  void set_numerics();
  void plan_kernels();
  void build_model();
  void build_optimizer();
  void join_ranks();
  void prepare_buffers();
  // Forward and loss under the rung's autocast, scaled by 1/micro_steps.
  torch::Tensor forward_loss(const torch::Tensor& x, const torch::Tensor& y);  // (B, T) -> ()
  // Clips the gradients to the global norm cfg.train.grad_clip and updates:
  // at `lr`, or at the optimizer's device LR (in a graph). With the flat
  // buffer and the fused AdamW, the clip's scaling happens inside the AdamW
  // kernel instead of a pass of its own. Returns the norm before clipping.
  torch::Tensor clip_and_update(double lr, bool device_lr);
  // Captures the micro-step graph, or with `whole` the last micro-step's
  // graph that also clips, steps the optimizer and zeroes the gradients.
  std::unique_ptr<GraphedStep> capture_graph(bool whole, const torch::Tensor& x, const torch::Tensor& y);
  // The parts of run(), in its order: one micro-step's batch on the device
  // (the data phase); a micro-step as a graph replay (true when the replay
  // also ran the optimizer) or eagerly (its loss); the gradients kept for
  // keep_gradients_step; the optimizer phase.
  Batch load_batch(int64_t step, int64_t micro, PhaseObserver& phases);
  bool replay_micro_step(int64_t step, bool last, const Batch& batch, StepOutput& out, torch::Tensor& loss_sum,
                         PhaseObserver& phases);
  torch::Tensor eager_micro_step(int64_t step, bool last, const Batch& batch, PhaseObserver& phases,
                                 CommObserver& comm);
  void keep_gradients();
  void optimizer_phase(StepOutput& out, PhaseObserver& phases);

  RunConfig cfg_;
  StepPlan plan_;  // from cfg_'s switches (plan_for)
  torch::Device device_;
  std::unique_ptr<TokenSource> data_;
  GPT model_{nullptr};
  std::unique_ptr<StepOptimizer> optimizer_;
  ShardedOptimizer* sharded_ = nullptr;  // optimizer_ when it is ZeRO-1's
  // flat-grads: gradients in one flat buffer; cuda-graph (CUDA, one process):
  // graphs captured at the first step. A step replays micro_graph_ for all but
  // its last micro-step and step_graph_ (forward, backward, clip, fused AdamW,
  // zeroing) for the last; without fused AdamW the optimizer runs eagerly
  // after micro_graph_ replays. The two share one memory pool.
  std::unique_ptr<FlatGradients> flat_grads_;
  std::optional<AttentionPlan> attention_plan_;
  // The process settings the constructor changes (tf32's matmul precision,
  // the attention plan's SDP switches), put back by the destructor.
  SavedPrecision saved_precision_;
  attention::SavedSdpSwitches saved_sdp_switches_;
  // cast-cache (with bf16 in effect): the fused ops' bf16 weight copies,
  // refreshed after every optimizer update; the model's options share it.
  std::shared_ptr<CastCache> casts_;
  bool use_graph_ = false;
  bool optimizer_in_graph_ = false;
  std::unique_ptr<GraphedStep> micro_graph_, step_graph_;
  std::optional<GraphPoolId> graph_pool_;
  int64_t graph_replays_ = 0, steps_run_ = 0;
  ProcessGroup* pg_ = nullptr;
  std::unique_ptr<GradientSync> sync_;       // ddp rung
  std::vector<torch::Tensor> params_;
  int64_t decay_steps_;
  PrecisionEffect tf32_effect_, bf16_effect_;
  int64_t add_layer_norm_calls_at_start_ = 0;  // fused-ln is effective if add_layer_norm ran since
  fused::LayerNormLaunches layer_norm_launches_at_start_;
  fused::FusedLinearStats fused_linear_at_start_;
  std::string step_range_name_;  // "step <rung>"
  int64_t keep_gradients_step_ = -1;
  std::vector<std::pair<std::string, torch::Tensor>> kept_gradients_;
};

// clip_grad_norm_ without a host sync: foreach norms, one global norm, and a
// clamped scale, as PyTorch's foreach implementation. Returns the norm.
torch::Tensor clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

}  // namespace ladder
