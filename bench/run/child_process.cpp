// bench/run/child_process.cpp: fork/exec, wait, timeouts and Ctrl-C (see
// child_process.h).
#include "bench/run/child_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace ladder {

namespace {

std::atomic<bool> g_interrupted{false};
// The running children (one, or one per rank of a ddp cell), for Ctrl-C.
constexpr int kMaxChildren = 256;
std::atomic<pid_t> g_children[kMaxChildren];
std::atomic<int> g_n_children{0};

void on_interrupt(int sig) {
  g_interrupted = true;
  const int n = g_n_children.load();
  for (int i = 0; i < n; ++i) {
    const pid_t child = g_children[i].load();
    if (child > 0) kill(child, sig);  // async-signal-safe
  }
}

}  // namespace

InterruptHandler::InterruptHandler() {
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &old_int_);
  sigaction(SIGTERM, &sa, &old_term_);
  g_interrupted = false;
}

InterruptHandler::~InterruptHandler() {
  sigaction(SIGINT, &old_int_, nullptr);
  sigaction(SIGTERM, &old_term_, nullptr);
}

bool interrupted() { return g_interrupted.load(); }


int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(fmt::format("socket: {}", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error(fmt::format("cannot find a free port: {}", std::strerror(errno)));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

namespace {

// In the child after fork(): its environment, its output (ChildOutput), then
// the program. Never returns.
[[noreturn]] void exec_child(char* const* argv, const EnvVars& env, const ChildOutput& output) {
  for (const auto& [k, v] : env) {
    if (v.empty()) unsetenv(k.c_str()); else setenv(k.c_str(), v.c_str(), 1);
  }
  if (!output.log_path.empty()) {
    if (output.progress_fd >= 0) dup2(STDERR_FILENO, output.progress_fd);
    const int log = open(output.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (log < 0) {
      std::fprintf(stderr, "ladder: cannot open %s for %s's output: %s\n", output.log_path.c_str(), argv[0],
                   std::strerror(errno));
      _exit(127);
    }
    dup2(log, STDOUT_FILENO);
    dup2(log, STDERR_FILENO);
    if (log > STDERR_FILENO) close(log);
  }
  execv(argv[0], argv);
  std::fprintf(stderr, "ladder: cannot exec %s: %s\n", argv[0], std::strerror(errno));
  _exit(127);
}

}  // namespace

std::vector<ChildOutcome> run_children(const std::vector<std::string>& args, const std::vector<EnvVars>& envs,
                                       double timeout_s, double grace_s, const ChildOutput& output,
                                       double interrupt_grace_s) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = std::chrono::steady_clock::now();
  const size_t n = envs.size();
  if (n > size_t(kMaxChildren)) throw std::runtime_error(fmt::format("at most {} ranks", kMaxChildren));
  std::vector<pid_t> pids(n, 0);
  std::vector<ChildOutcome> out(n);
  std::vector<bool> running(n, false);
  for (size_t i = 0; i < n; ++i) {
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
    if (pid == 0) exec_child(argv.data(), envs[i], output);
    pids[i] = pid;
    running[i] = true;
    g_children[i] = pid;
    g_n_children = int(i + 1);
  }
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  double deadline = timeout_s;
  bool term_sent = false;
  double term_at = 0, interrupt_at = -1;
  size_t left = n;
  while (left > 0) {
    for (size_t i = 0; i < n; ++i) {
      if (!running[i]) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) != pids[i]) continue;
      running[i] = false;
      --left;
      out[i].seconds = elapsed();
      if (WIFEXITED(status)) {
        out[i].exited = true;
        out[i].exit_code = WEXITSTATUS(status);
      } else if (WIFSIGNALED(status)) {
        out[i].signal = WTERMSIG(status);
      }
      if (!(out[i].exited && out[i].exit_code == 0)) deadline = std::min(deadline, elapsed() + grace_s);
    }
    if (left == 0) break;
    // After Ctrl-C (forwarded by on_interrupt), a child that does not end
    // within interrupt_grace_s is stopped as at a timeout: a peer compiling
    // under torch.compile's autotuning swallowed SIGINT for minutes on the
    // 2026-11-29 H200, so the run never wrote its summary.
    if (interrupted() && interrupt_at < 0) {
      interrupt_at = elapsed();
      deadline = std::min(deadline, interrupt_at + interrupt_grace_s);
    }
    if (!term_sent && elapsed() > deadline) {
      for (size_t i = 0; i < n; ++i)
        if (running[i]) {
          out[i].timed_out = true;
          kill(pids[i], SIGTERM);
        }
      term_sent = true;
      term_at = elapsed();
    }
    if (term_sent && elapsed() - term_at > 10)
      for (size_t i = 0; i < n; ++i)
        if (running[i]) kill(pids[i], SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  g_n_children = 0;
  return out;
}

std::string log_tail(const std::string& path, size_t max_lines, const std::string& indent) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return "";
  constexpr std::streamoff kMaxBytes = 16 << 10;  // enough for the lines asked for
  const std::streamoff size = f.tellg();
  f.seekg(std::max<std::streamoff>(0, size - kMaxBytes));
  std::vector<std::string> lines;
  for (std::string line; std::getline(f, line);) lines.push_back(line);
  if (size > kMaxBytes && !lines.empty()) lines.erase(lines.begin());  // cut in the middle
  std::string tail;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
    tail += indent + lines[i] + "\n";
  return tail;
}

std::string describe_outcome(const ChildOutcome& out) {
  if (out.timed_out) return fmt::format("stopped after {:.1f} s (no result in time)", out.seconds);
  if (out.signal) return fmt::format("killed by signal {} ({}) after {:.1f} s", out.signal, strsignal(out.signal), out.seconds);
  return fmt::format("exited with code {} after {:.1f} s", out.exit_code, out.seconds);
}

}  // namespace ladder
