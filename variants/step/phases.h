// variants/step/phases.h: the phases of a training step, and who hears of them.
//
// A step is four phases: data (fetch and copy the batch), forward (logits and
// loss), backward, optimizer (clip, schedule, AdamW, zero grads); with
// gradient accumulation the first three repeat per micro-step. The step
// announces each phase's begin and end to a PhaseObserver and knows nothing
// of who listens: the harness times phases and tracks where a failure
// happened, the op breakdown tags kernels (bench/measure/observers/step_observer.h).
#pragma once

namespace ladder {

enum class Phase { kData, kForward, kBackward, kOptimizer };
inline constexpr Phase kPhases[] = {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kOptimizer};
inline const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kData: return "data";
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

// Both are called on the thread that runs the step. The base class hears
// nothing: pass one where no one listens.
class PhaseObserver {
 public:
  virtual ~PhaseObserver() = default;
  virtual void begin(Phase) {}
  virtual void end(Phase) {}
};

}  // namespace ladder
