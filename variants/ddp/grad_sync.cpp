// variants/ddp/grad_sync.cpp: buckets, hooks, launches and the wait (see
// grad_sync.h).
#include "variants/ddp/grad_sync.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "profiler/ranges/range.h"

namespace ladder {

namespace {
constexpr int64_t kFirstBucketBytes = 1 << 20;  // PyTorch DDP's first-bucket cap

// Runs after autograd has accumulated a parameter's gradient.
class ReadyHook final : public torch::autograd::PostAccumulateGradHook {
 public:
  ReadyHook(GradientSync* sync, size_t index) : sync_(sync), index_(index) {}
  void operator()(const torch::autograd::Variable&) override { sync_->on_grad_ready(index_); }

 private:
  GradientSync* sync_;
  size_t index_;
};
}  // namespace

struct GradientSync::Bucket {
  torch::Tensor flat;          // (numel,) gradient buffer; params' grads are views of it
  std::vector<size_t> params;  // indices into params_
  size_t pending = 0;          // gradients not yet ready in this backward
  bool launched = false;
  c10::intrusive_ptr<c10d::Work> work;
};

GradientSync::GradientSync(const std::vector<torch::Tensor>& params, ProcessGroup& pg,
                           int64_t bucket_cap_bytes, bool defer_host_wait)
    : pg_(pg), params_(params), defer_host_wait_(defer_host_wait), bucket_cap_bytes_(bucket_cap_bytes) {
  TORCH_CHECK(!params_.empty(), "GradientSync: no parameters");
  bucket_of_param_.assign(params_.size(), 0);
  // Reverse order: the last layers' gradients are ready first.
  std::vector<std::vector<size_t>> groups(1);
  int64_t bytes = 0;
  for (size_t k = params_.size(); k-- > 0;) {
    const int64_t b = params_[k].numel() * int64_t(params_[k].element_size());
    const int64_t cap = groups.size() == 1 ? std::min(kFirstBucketBytes, bucket_cap_bytes_) : bucket_cap_bytes_;
    if (!groups.back().empty() && bytes + b > cap) {
      groups.emplace_back();
      bytes = 0;
    }
    groups.back().push_back(k);
    bytes += b;
  }
  const auto opts = params_.front().options().requires_grad(false);
  for (auto& g : groups) {
    auto bucket = std::make_unique<Bucket>();
    int64_t numel = 0;
    for (size_t k : g) numel += params_[k].numel();
    bucket->flat = torch::zeros({numel}, opts);  // (numel,)
    int64_t offset = 0;
    for (size_t k : g) {
      auto& p = params_[k];
      TORCH_CHECK(p.scalar_type() == params_.front().scalar_type() && p.device() == params_.front().device(),
                  "GradientSync: parameters must share one dtype and device");
      p.mutable_grad() = bucket->flat.narrow(0, offset, p.numel()).view(p.sizes());
      offset += p.numel();
      bucket_of_param_[k] = buckets_.size();
    }
    bucket->params = std::move(g);
    buckets_.push_back(std::move(bucket));
  }
  if (pg_.backend_name() == "nccl") device_timer_ = make_device_comm_timer();
  for (size_t k = 0; k < params_.size(); ++k) {
    param_names_.push_back(fmt::format("param {} ({})", k, fmt::join(params_[k].sizes(), "x")));
    torch::autograd::impl::set_post_acc_grad_hooks(params_[k], std::make_unique<ReadyHook>(this, k));
  }
}

GradientSync::~GradientSync() {
  for (auto& p : params_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void GradientSync::prepare(bool sync, CommObserver& comm) {
  sync_ = sync;
  comm_ = &comm;
  next_launch_ = 0;
  for (auto& b : buckets_) {
    b->pending = b->params.size();
    b->launched = false;
    b->work.reset();
  }
}

void GradientSync::on_grad_ready(size_t k) {
  if (!sync_) return;
  Bucket& b = *buckets_[bucket_of_param_[k]];
  if (logging_) event_order_.push_back(fmt::format("ready {} (bucket {})", param_names_[k], bucket_of_param_[k]));
  if (b.pending > 0) --b.pending;
  // Collectives must be issued in the same order on every rank: launch
  // complete buckets strictly in index order.
  while (next_launch_ < buckets_.size() && buckets_[next_launch_]->pending == 0) launch(next_launch_++);
}

void GradientSync::launch(size_t i) {
  Bucket& b = *buckets_[i];
  if (logging_) event_order_.push_back(fmt::format("launch bucket {}", i));
  b.flat.div_(double(pg_.world_size()));  // sum of g / world = the average
  comm_->launched(int(i), b.flat.numel() * int64_t(b.flat.element_size()));
  {
    profiler::ScopedRange range(profiler::names::allreduce_bucket(int64_t(i)));  // Nsight and Kineto
    b.work = pg_.allreduce_sum(b.flat);
  }
  b.launched = true;
  CommObserver* comm = comm_;
  const int index = int(i);
  b.work->getFuture()->addCallback([comm, index](c10::ivalue::Future&) { comm->done(index); });
}

void GradientSync::finish(int64_t step) {
  if (!sync_) return;
  comm_->wait_begins();
  if (logging_) event_order_.push_back("backward returned; waiting for all buckets");
  logging_ = false;
  while (next_launch_ < buckets_.size()) launch(next_launch_++);  // unused parameters
  if (device_timer_) device_timer_->compute_end();
  const bool host_waits_now = !device_timer_ || !defer_host_wait_;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    // The exposed communication: a range the op breakdown counts as such.
    profiler::ScopedRange range(profiler::names::allreduce_bucket(int64_t(i)) + " wait");
    const std::string what = bucket_what(i, step);
    if (host_waits_now)
      pg_.wait(buckets_[i]->work, what);
    else
      pg_.order_after(buckets_[i]->work, what);
  }
  awaiting_step_ = host_waits_now ? -1 : step;
  if (device_timer_) {
    device_timer_->waited();
    comm_->device_timing([this] {
      double busy = 0;  // the buckets run one after another on NCCL's stream
      for (const auto& b : buckets_) busy += double(b->work->getDuration());
      return std::make_pair(busy, device_timer_->exposed_ms());
    });
  }
}

void GradientSync::await() {
  if (awaiting_step_ < 0) return;
  const int64_t step = awaiting_step_;
  awaiting_step_ = -1;
  for (size_t i = 0; i < buckets_.size(); ++i) {
    profiler::ScopedRange range(profiler::names::allreduce_bucket(int64_t(i)) + " host wait");
    pg_.wait(buckets_[i]->work, bucket_what(i, step));
  }
}

std::string GradientSync::bucket_what(size_t i, int64_t step) {
  return fmt::format("all-reduce of gradient bucket {} at step {}", i, step);
}

void GradientSync::zero_grads() {
  for (auto& b : buckets_) b->flat.zero_();
}

GradSyncFacts GradientSync::describe() const {
  GradSyncFacts d;
  d.mechanism = "c10d " + pg_.backend_name() + " all-reduce per bucket, launched from post-accumulate-grad hooks";
  d.bucket_cap_bytes = bucket_cap_bytes_;
  d.first_bucket_cap_bytes = std::min(kFirstBucketBytes, bucket_cap_bytes_);
  d.bucket_order = "reverse parameter order";
  d.gradient_as_bucket_view = true;
  for (const auto& b : buckets_)
    d.buckets.push_back({b->flat.numel() * int64_t(b->flat.element_size()), int64_t(b->params.size())});
  d.first_sync_event_order = event_order_;
  return d;
}

void add_collective_work(const WorkShape&, const WorkFlags& f, WorkList& work) {
  if (f.world <= 1) return;
  const double W = double(f.world), each_way = (W - 1) / W * double(f.n_params) * 4;
  work.add({f.zero1 ? "ddp/reduce-scatter + all-gather" : "ddp/all-reduce", profiler::Category::kCommunication,
            WorkBound::kLink, 1, 0, each_way, each_way});
}

}  // namespace ladder
