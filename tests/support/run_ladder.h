// tests/support/run_ladder.h: runs the `ladder` binary as a user would and captures
// its exit code and output (stdout and stderr together).
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace ladder::test {

struct Result {
  int exit_code;
  std::string output;  // stdout and stderr
};

inline Result run_ladder(const std::string& args) {
  const std::string cmd = std::string(LADDER_BIN) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  EXPECT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace ladder::test
