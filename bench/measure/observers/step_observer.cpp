// bench/measure/observers/step_observer.cpp: see step_observer.h.
#include "bench/measure/observers/step_observer.h"

namespace ladder {

// Outermost first on the way in, innermost first on the way out.
void StepObservers::measurement_begins() {
  for (auto it = list_.rbegin(); it != list_.rend(); ++it) (*it)->measurement_begins();
}
void StepObservers::before_step(int64_t step, bool measured) {
  for (auto it = list_.rbegin(); it != list_.rend(); ++it) (*it)->before_step(step, measured);
}
void StepObservers::step_begins(int64_t step) {
  for (auto it = list_.rbegin(); it != list_.rend(); ++it) (*it)->step_begins(step);
}
void StepObservers::begin(Phase p) {
  for (auto it = list_.rbegin(); it != list_.rend(); ++it) (*it)->phase_begins(p);
}
void StepObservers::end(Phase p) {
  for (StepObserver* o : list_) o->phase_ends(p);
}
void StepObservers::step_ends(int64_t step) {
  for (StepObserver* o : list_) o->step_ends(step);
}
void StepObservers::after_step(StepRecord& rec, bool measured) {
  for (StepObserver* o : list_) o->after_step(rec, measured);
}
void StepObservers::measurement_ends(int64_t last_step) {
  for (StepObserver* o : list_) o->measurement_ends(last_step);
}

}  // namespace ladder
