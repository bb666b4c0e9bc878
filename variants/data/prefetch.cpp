// variants/data/prefetch.cpp: the background batch producer (see prefetch.h).
#include "variants/data/prefetch.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

#include <c10/core/DeviceGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <nlohmann/json.hpp>

namespace ladder {

namespace {

struct Key {
  int64_t step, micro;
  bool operator==(const Key& o) const { return step == o.step && micro == o.micro; }
};

class PrefetchingSource final : public TokenSource {
 public:
  PrefetchingSource(std::unique_ptr<TokenSource> inner, int64_t micro_steps, bool background,
                    PrefetchListener listener, torch::Device device)
      : inner_(std::move(inner)), micro_steps_(micro_steps), background_(background),
        listener_(std::move(listener)) {
    if (!background_) return;
    if (device.is_cuda() && !device.has_index())
      device = c10::impl::getDeviceGuardImpl(device.type())->getDevice();  // the current one
    pending_ = Key{0, 0};  // the first batch is made while the model is built
    worker_ = std::thread([this, device] {
      // The current device is per thread: without this, the first pinned
      // allocation here would use (and initialise) device 0.
      c10::OptionalDeviceGuard guard;
      if (device.is_cuda()) guard.reset_device(device);
      work();
    });
  }

  ~PrefetchingSource() override {
    if (!background_) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  Batch batch(int64_t step, int64_t micro) override {
    const Key key{step, micro};
    Batch out = background_ ? take(key) : produce(key);
    ++batches_;
    tokens_ += out.x.numel();
    emit(PrefetchEvent::kHandOver, key);
    return out;
  }

  DataSection describe() const override {
    DataSection d = inner_->describe();
    d.prefetch = {background_,
                  background_ ? "background thread, one batch ahead" : "synchronous, in the step's data phase",
                  ready_on_request_, not_predicted_};
    d.batches_consumed = batches_;
    d.tokens_consumed = tokens_;
    return d;
  }

 private:
  struct Slot {
    Key key;
    bool done = false;
    Batch batch;
    std::exception_ptr error;
  };

  void emit(PrefetchEvent::Kind kind, const Key& k) const {
    if (listener_) listener_({kind, k.step, k.micro});
  }

  Key successor(const Key& k) const {
    return k.micro + 1 < micro_steps_ ? Key{k.step, k.micro + 1} : Key{k.step + 1, 0};
  }

  Batch produce(const Key& k) {
    emit(PrefetchEvent::kProduceBegin, k);
    Batch b = inner_->batch(k.step, k.micro);
    emit(PrefetchEvent::kProduceEnd, k);
    return b;
  }

  // Caller's thread: the batch for `key`, then ask for its successor.
  Batch take(const Key& key) {
    std::unique_lock<std::mutex> lock(mu_);
    const bool predicted = (pending_ && *pending_ == key) || (slot_ && slot_->key == key);
    if (!predicted) {
      ++not_predicted_;
      cv_.wait(lock, [&] { return !pending_ && !busy_; });
      slot_.reset();
      pending_ = key;
      cv_.notify_all();
    } else if (slot_ && slot_->key == key && slot_->done) {
      ++ready_on_request_;
    }
    cv_.wait(lock, [&] { return slot_ && slot_->key == key && slot_->done; });
    Slot slot = std::move(*slot_);
    slot_.reset();
    pending_ = successor(key);
    lock.unlock();
    cv_.notify_all();
    if (slot.error) std::rethrow_exception(slot.error);
    return slot.batch;
  }

  // Producer thread: make each requested batch.
  void work() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stop_ || pending_.has_value(); });
      if (stop_) return;
      const Key key = *pending_;
      pending_.reset();
      slot_.emplace(Slot{key, /*done=*/false, Batch{}, std::exception_ptr{}});
      busy_ = true;
      lock.unlock();
      Batch b;
      std::exception_ptr error;
      try {
        b = produce(key);
      } catch (...) {
        error = std::current_exception();
      }
      lock.lock();
      slot_->batch = std::move(b);
      slot_->error = error;
      slot_->done = true;
      busy_ = false;
      cv_.notify_all();
    }
  }

  std::unique_ptr<TokenSource> inner_;
  const int64_t micro_steps_;
  const bool background_;
  const PrefetchListener listener_;
  // Caller's thread only.
  int64_t batches_ = 0, tokens_ = 0, ready_on_request_ = 0, not_predicted_ = 0;
  // Shared with the producer, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<Key> pending_;  // asked for, not yet started
  std::optional<Slot> slot_;    // being made, or made and not yet taken
  bool busy_ = false, stop_ = false;
  std::thread worker_;
};

}  // namespace

std::unique_ptr<TokenSource> make_prefetching_source(std::unique_ptr<TokenSource> inner,
                                                     int64_t micro_steps, bool background,
                                                     PrefetchListener listener, const torch::Device& device) {
  return std::make_unique<PrefetchingSource>(std::move(inner), micro_steps, background,
                                             std::move(listener), device);
}

}  // namespace ladder
