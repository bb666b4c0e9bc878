// tests/test_nvtx.cpp: the NVTX ranges of one step, as Nsight would see them.
//
// `ladder measure` runs one measured step of the tiny preset with
// NVTX_INJECTION64_PATH naming tests/nvtx_recorder.cpp's library, which logs
// every push and pop; the test rebuilds the main thread's range tree and
// compares it with the exact expected tree.
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

struct Node {
  std::string name;
  std::vector<Node> children;
};

void render(const Node& n, int depth, std::string& out) {
  out += std::string(size_t(2 * depth), ' ') + n.name + "\n";
  for (const auto& c : n.children) render(c, depth + 1, out);
}

// The range tree of the process's main thread (its thread id is the pid),
// rendered with two spaces per level. Fails the test on an unbalanced log.
std::string main_thread_tree(const fs::path& record) {
  std::ifstream in(record);
  EXPECT_TRUE(bool(in)) << "no NVTX record at " << record << ": the injection library did not load";
  std::string line;
  long pid = -1;
  Node root;
  std::vector<Node*> stack{&root};
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string what;
    long tid = 0;
    ls >> what >> tid;
    if (what == "pid") {
      pid = tid;
      continue;
    }
    if (tid != pid) continue;
    if (what == "push") {
      std::string name;
      std::getline(ls >> std::ws, name);
      stack.back()->children.push_back({name, {}});
      stack.push_back(&stack.back()->children.back());
    } else if (what == "pop") {
      EXPECT_GT(stack.size(), 1u) << "pop without a push";
      if (stack.size() > 1) stack.pop_back();
    }
  }
  EXPECT_EQ(stack.size(), 1u) << "ranges left open";
  std::string out;
  for (const auto& c : root.children) render(c, 0, out);
  return out;
}

class Nvtx : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ladder_nvtx_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // One measured step, no warmup, no extra profiled step; returns the tree.
  std::string one_step(const std::string& args) {
    const fs::path record = dir_ / "nvtx.log";
    const std::string cmd = "NVTX_INJECTION64_PATH=" + std::string(NVTX_RECORDER) +
                            " LADDER_NVTX_RECORD=" + record.string() + " " + LADDER_BIN +
                            " measure --preset tiny --steps 1 --warmup 0 --threads 1 --no-op-count --quiet --out " +
                            (dir_ / "run").string() + " " + args + " 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    return main_thread_tree(record);
  }

  fs::path dir_;
};

TEST_F(Nvtx, OneStepRangeTree) {
  EXPECT_EQ(one_step("--rung fp32"),
            "measured steps\n"
            "  step fp32\n"
            "    data\n"
            "    forward\n"
            "    backward\n"
            "    optimizer\n");
}

TEST_F(Nvtx, LayerRangesInForwardAndBackward) {
  // Backward visits the blocks in reverse.
  EXPECT_EQ(one_step("--rung fp32 --layer-ranges"),
            "measured steps\n"
            "  step fp32\n"
            "    data\n"
            "    forward\n"
            "      layer 0\n"
            "      layer 1\n"
            "    backward\n"
            "      layer 1\n"
            "      layer 0\n"
            "    optimizer\n");
}

TEST_F(Nvtx, FusedPathLayerRanges) {
  // The fused rung carries two streams across each block boundary.
  EXPECT_EQ(one_step("--rung fused --layer-ranges"),
            "measured steps\n"
            "  step fused\n"
            "    data\n"
            "    forward\n"
            "      layer 0\n"
            "      layer 1\n"
            "    backward\n"
            "      layer 1\n"
            "      layer 0\n"
            "    optimizer\n");
}

TEST_F(Nvtx, GradAccumRepeatsEachMicroStep) {
  // tiny: 1024 tokens per step / (B4 x T64) = 4 micro-steps, one optimizer step.
  std::string micro;
  for (int i = 0; i < 4; ++i) micro += "    data\n    forward\n    backward\n";
  EXPECT_EQ(one_step("--rung grad-accum"), "measured steps\n  step grad-accum\n" + micro + "    optimizer\n");
}

}  // namespace
