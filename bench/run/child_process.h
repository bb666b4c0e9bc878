// bench/run/child_process.h: the runner's child processes: start them, wait for
// them with a timeout, stop them, and pass Ctrl-C on to them.
//
// While an InterruptHandler lives, SIGINT and SIGTERM set interrupted() and
// are forwarded to the children run_children() is waiting for (one, or one
// per rank of a ddp cell), so Ctrl-C stops the child (SIGTERM, then SIGKILL,
// where it does not end on its own) and the runner keeps what completed.
#pragma once

#include <signal.h>

#include <string>
#include <utility>
#include <vector>

namespace ladder {

// Installs the SIGINT/SIGTERM handler and clears interrupted(); the previous
// handlers come back when it goes out of scope.
class InterruptHandler {
 public:
  InterruptHandler();
  ~InterruptHandler();
  InterruptHandler(const InterruptHandler&) = delete;
  InterruptHandler& operator=(const InterruptHandler&) = delete;

 private:
  struct sigaction old_int_ {}, old_term_ {};
};

// Whether SIGINT or SIGTERM arrived since the InterruptHandler was installed.
bool interrupted();

struct ChildOutcome {
  bool exited = false;
  int exit_code = 0;
  int signal = 0;
  bool timed_out = false;
  double seconds = 0;
};

using EnvVars = std::vector<std::pair<std::string, std::string>>;

// Where a child's output goes. By default it shares the runner's stdout and
// stderr. With `log_path`, its stdout and stderr are appended to that file
// instead, and `progress_fd` (when >= 0) is the runner's stderr opened in
// the child under that number, for the progress lines alone.
struct ChildOutput {
  std::string log_path;
  int progress_fd = -1;
};

// Runs one process per entry of `envs` (the same args, its own environment
// additions), waits for all of them and returns their outcomes in order.
// After `timeout_s` all are stopped (SIGTERM, then SIGKILL 10 s later). Once
// one fails, the rest get `grace_s` to end on their own before they are
// stopped too: a ddp rank must notice a dead peer within its timeout.
// After an interrupt (Ctrl-C, SIGTERM: forwarded to them) they get
// kInterruptGraceS to end, and are then stopped the same way.
inline constexpr double kInterruptGraceS = 10;
std::vector<ChildOutcome> run_children(const std::vector<std::string>& args, const std::vector<EnvVars>& envs,
                                       double timeout_s, double grace_s, const ChildOutput& output = {},
                                       double interrupt_grace_s = kInterruptGraceS);

// The last `max_lines` lines of a child's log (ChildOutput::log_path), each
// with `indent` before it; "" when the file is missing or empty.
std::string log_tail(const std::string& path, size_t max_lines, const std::string& indent);

// What happened to a child, in words.
std::string describe_outcome(const ChildOutcome& out);

// A free TCP port on loopback for a ddp cell's rendezvous.
int free_port();

}  // namespace ladder
