// variants/ddp/zero1.cpp: see zero1.h.
#include "variants/ddp/zero1.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "profiler/ranges/range.h"
#include "variants/ddp/comm_observer.h"
#include "variants/ddp/process_group.h"

namespace ladder {

std::vector<std::vector<ShardPiece>> shard_ranges(const std::vector<int64_t>& numels, int world_size) {
  TORCH_CHECK(world_size >= 1, "shard_ranges: world_size ", world_size, " < 1");
  int64_t total = 0;
  for (int64_t n : numels) total += n;
  const int64_t range = (total + world_size - 1) / world_size;
  std::vector<std::vector<ShardPiece>> out(static_cast<size_t>(world_size));
  int64_t offset = 0;  // of tensor i in the concatenation
  for (size_t i = 0; i < numels.size(); offset += numels[i], ++i) {
    for (int64_t at = offset; at < offset + numels[i];) {
      const int64_t r = at / range, range_end = std::min((r + 1) * range, offset + numels[i]);
      out[size_t(r)].push_back({i, at - offset, range_end - offset});
      at = range_end;
    }
  }
  return out;
}

int64_t shard_elements(const std::vector<ShardPiece>& pieces) {
  int64_t n = 0;
  for (const ShardPiece& p : pieces) n += p.end - p.begin;
  return n;
}

ShardedOptimizer::ShardedOptimizer(const std::vector<torch::Tensor>& params, const TrainConfig& cfg, bool fused,
                                   ProcessGroup& pg)
    : pg_(pg), params_(params) {
  const int world = pg.world_size();
  std::vector<int64_t> numels;
  int64_t total = 0;
  for (const auto& p : params_) {
    numels.push_back(p.numel());
    total += p.numel();
  }
  ranges_ = shard_ranges(numels, world);
  range_ = (total + world - 1) / world;
  torch::NoGradGuard no_grad;
  // The parameters move into the flat buffer and stay views of it (as
  // ZeroRedundancyOptimizer's parameters_as_bucket_view, and the ddp rung's
  // gradients in its buckets): the owner's AdamW updates its range in place
  // and the broadcasts write the others' straight into the parameters.
  flat_ = torch::zeros({range_ * world}, params_.front().options());
  std::vector<int64_t> offsets;
  int64_t offset = 0;
  for (auto& p : params_) {
    torch::Tensor view = flat_.narrow(0, offset, p.numel()).view(p.sizes());
    view.copy_(p);
    p.set_data(view);
    offsets.push_back(offset);
    offset += p.numel();
  }
  // This rank's pieces, each in its parameter's weight-decay group.
  ParamGroups groups;
  for (const ShardPiece& piece : ranges_[size_t(pg.rank())]) {
    pieces_.push_back(flat_.narrow(0, offsets[piece.index] + piece.begin, piece.end - piece.begin));
    (params_[piece.index].dim() >= 2 ? groups.decay : groups.no_decay).push_back(pieces_.back());
  }
  if (!pieces_.empty()) inner_ = make_optimizer(groups, cfg, fused);
  name_ = fmt::format("ZeRO-1 over {} (rank {}: {} of {} elements, in {} pieces of {} tensors)",
                      fused ? "at::_fused_adamw_" : "torch::optim::AdamW", pg.rank(),
                      shard_elements(ranges_[size_t(pg.rank())]), total, pieces_.size(),
                      params_.size());
}

ShardedOptimizer::~ShardedOptimizer() = default;

void ShardedOptimizer::attach_gradients() {
  const auto& mine = ranges_[size_t(pg_.rank())];
  for (size_t k = 0; k < mine.size(); ++k) {
    const torch::Tensor& grad = params_[mine[k].index].grad();
    TORCH_CHECK(grad.defined(), "ZeRO-1: parameter ", mine[k].index, " has no gradient at the optimizer step");
    pieces_[k].mutable_grad() = grad.reshape(-1).narrow(0, mine[k].begin, mine[k].end - mine[k].begin);
  }
}

void ShardedOptimizer::step(double lr, const torch::Tensor& grad_divisor) {
  if (inner_) {
    attach_gradients();  // views: the ddp rung's gradients stay in its buckets
    inner_->step(lr, grad_divisor);  // this rank's range, in place in the parameters
  }
  torch::NoGradGuard no_grad;
  profiler::ScopedRange range(profiler::names::kZero1Gather);
  const auto t0 = std::chrono::steady_clock::now();
  // Every rank launches the same broadcasts in the same order (rank 0's
  // range first): a collective must be called alike on every rank.
  std::vector<c10::intrusive_ptr<c10d::Work>> works;
  for (int r = 0; r < pg_.world_size(); ++r) {
    torch::Tensor range = flat_.narrow(0, r * range_, range_);
    works.push_back(pg_.broadcast(range, r));
  }
  for (int r = 0; r < pg_.world_size(); ++r) {
    const std::string what = fmt::format("broadcast of rank {}'s updated parameters (ZeRO-1)", r);
    // The stream's order first (the next forward reads these parameters),
    // then the host's deadline: a dead rank fails here with the census, not
    // in a later synchronisation.
    pg_.order_after(works[size_t(r)], what);
    pg_.wait(works[size_t(r)], what);
  }
  if (comm_)
    comm_->gathered(flat_.numel() * int64_t(flat_.element_size()),
                    std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

void ShardedOptimizer::zero_grad(bool set_to_none) { zero_gradients(params_, set_to_none); }

int64_t ShardedOptimizer::fused_kernel_calls() const { return inner_ ? inner_->fused_kernel_calls() : 0; }

Zero1Sharding ShardedOptimizer::describe() const {
  const int64_t element = int64_t(flat_.element_size());
  Zero1Sharding d;
  int64_t all = 0;
  for (int r = 0; r < pg_.world_size(); ++r) {
    const int64_t n = shard_elements(ranges_[size_t(r)]);
    all += n;
    d.shards.push_back({r, n, int64_t(ranges_[size_t(r)].size()), n * element});
  }
  d.ranks = pg_.world_size();
  d.optimizer_state_bytes_this_rank = 2 * d.shards[size_t(pg_.rank())].parameter_bytes;
  d.optimizer_state_bytes_unsharded = 2 * all * element;
  d.parameter_bytes_broadcast_per_step = all * element;
  d.placement = "after this rank's AdamW step, before the next forward, in the optimizer phase; not overlapped "
                "with compute (per step: gather_ms and gather_bytes; the trace range 'zero1 parameter gather')";
  d.gradients = "all-reduced as the ddp rung's (every rank needs the whole gradient for the clip norm)";
  return d;
}

}  // namespace ladder
