// profiler/trace/kineto_session.cpp: see kineto_session.h.
#include "profiler/trace/kineto_session.h"

#include <algorithm>
#include <cstdlib>
#include <set>

#include <ActivityType.h>
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/csrc/profiler/kineto_shim.h>

namespace ladder::profiler {

namespace prof = torch::autograd::profiler;
using torch::profiler::impl::ActivityType;

namespace {
prof::ProfilerConfig config_of(const KinetoOptions& o) {
  return prof::ProfilerConfig(prof::ProfilerState::KINETO, o.record_shapes, o.profile_memory);
}
std::set<ActivityType> activities_of(const KinetoOptions& o) {
  std::set<ActivityType> a{ActivityType::CPU};
  if (o.cuda) a.insert(ActivityType::CUDA);
  return a;
}
constexpr const char* kStepPrefix = "ProfilerStep#";
}  // namespace

KinetoSession::KinetoSession(const KinetoOptions& options) : options_(options) {
  // On CPU-only runs Kineto's probe for GPUs logs a spurious error; a user's
  // own KINETO_LOG_LEVEL still wins.
  if (!options_.cuda) setenv("KINETO_LOG_LEVEL", "5", /*overwrite=*/0);
  prof::prepareProfiler(config_of(options_), activities_of(options_));
}

KinetoSession::~KinetoSession() {
  // A session that only warmed up is started and stopped, as torch.profiler
  // does when it exits during warmup, so Kineto's collectors shut down.
  if (stopped_) return;
  try {
    if (!recording_) start();
    prof::disableProfiler();
  } catch (const std::exception&) {
    // Destructors must not throw; the events were being dropped anyway.
  }
}

void KinetoSession::start() {
  prof::enableProfiler(config_of(options_), activities_of(options_));
  recording_ = true;
}

void KinetoSession::add_metadata_json(const std::string& key, const std::string& json_value) {
  prof::addMetadataJson(key, json_value);
}

std::unique_ptr<prof::ProfilerResult> KinetoSession::stop() {
  recording_ = false;
  stopped_ = true;
  return prof::disableProfiler();
}

std::vector<StepSpan> step_spans(const prof::ProfilerResult& result) {
  std::vector<StepSpan> spans;
  for (const auto& ev : result.events()) {
    if (ev.deviceType() != c10::DeviceType::CPU) continue;
    const std::string name = ev.name();
    if (name.rfind(kStepPrefix, 0) != 0) continue;
    spans.push_back({std::stoll(name.substr(std::char_traits<char>::length(kStepPrefix))),
                     int64_t(ev.startNs()), int64_t(ev.endNs()), ev.startThreadId()});
  }
  return spans;
}

std::vector<HostEvent> host_events(const prof::ProfilerResult& result, uint64_t thread) {
  std::vector<HostEvent> out;
  for (const auto& ev : result.events()) {
    if (ev.deviceType() != c10::DeviceType::CPU || ev.startThreadId() != thread) continue;
    const auto type = libkineto::ActivityType(ev.activityType());
    const bool user = type == libkineto::ActivityType::USER_ANNOTATION;
    if (!user && type != libkineto::ActivityType::CPU_OP) continue;
    std::string name = ev.name();
    if (user && name.rfind(kStepPrefix, 0) == 0) continue;
    out.push_back({std::move(name), int64_t(ev.startNs()), int64_t(ev.endNs()), user, ev.sequenceNr()});
  }
  return out;
}

std::vector<Breakdown> step_host_breakdowns(const prof::ProfilerResult& result) {
  auto spans = step_spans(result);
  std::sort(spans.begin(), spans.end(), [](const StepSpan& a, const StepSpan& b) { return a.step < b.step; });
  std::vector<Breakdown> out;
  for (const auto& span : spans) out.push_back(host_breakdown(host_events(result, span.thread), span.begin_ns, span.end_ns));
  return out;
}

}  // namespace ladder::profiler
