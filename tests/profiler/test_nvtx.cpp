// tests/profiler/test_nvtx.cpp: the NVTX ranges of one step, as Nsight would see them.
//
// `ladder measure` runs the tiny preset with NVTX_INJECTION64_PATH naming
// tests/profiler/nvtx_recorder.cpp's library, which logs every push and pop with its
// thread and time; the test rebuilds each thread's range tree and compares
// the measured steps' tree with the exact expected one. What Nsight shows
// differs by device (profiler/README.md, "The ranges"):
//  - CPU: everything on the main thread, backward's layer ranges inside
//    `backward`;
//  - CUDA, eager rungs: the same phases on the main thread, but LibTorch's
//    autograd engine runs backward on a device thread of its own, so the
//    backward `layer i` ranges are on that thread, inside the main thread's
//    `backward` range in time;
//  - CUDA, the graph path (fused and above, not ddp): a replay runs no host
//    code, so forward and backward are one range, `forward+backward (CUDA
//    graph)`, with no layer ranges (the first step captures the graph).
// The CPU cases pin --device cpu; the CUDA cases skip without a GPU.
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace {

namespace fs = std::filesystem;

struct Node {
  std::string name;
  long long begin_ns = 0, end_ns = 0;
  std::vector<Node> children;
};

void render(const Node& n, int depth, std::string& out) {
  out += std::string(size_t(2 * depth), ' ') + n.name + "\n";
  for (const auto& c : n.children) render(c, depth + 1, out);
}

const Node* find(const Node& n, const std::string& name) {
  if (n.name == name) return &n;
  for (const auto& c : n.children)
    if (const Node* f = find(c, name)) return f;
  return nullptr;
}

// Every thread's range forest from the recorder's log; the main thread's id
// is the pid. Fails the test on an unbalanced log.
struct Record {
  long pid = -1;
  std::map<long, Node> threads;  // thread id -> root (its children are the top-level ranges)
};

Record read_record(const fs::path& path) {
  std::ifstream in(path);
  EXPECT_TRUE(bool(in)) << "no NVTX record at " << path << ": the injection library did not load";
  Record rec;
  std::map<long, std::vector<Node*>> stacks;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string what;
    long tid = 0;
    long long ns = 0;
    ls >> what >> tid;
    if (what == "pid") {
      rec.pid = tid;
      continue;
    }
    ls >> ns;
    auto& stack = stacks[tid];
    if (stack.empty()) stack.push_back(&rec.threads[tid]);
    if (what == "push") {
      std::string name;
      std::getline(ls >> std::ws, name);
      stack.back()->children.push_back({name, ns, ns, {}});
      stack.push_back(&stack.back()->children.back());
    } else if (what == "pop") {
      EXPECT_GT(stack.size(), 1u) << "pop without a push on thread " << tid;
      if (stack.size() > 1) {
        stack.back()->end_ns = ns;
        stack.pop_back();
      }
    }
  }
  for (const auto& [tid, stack] : stacks) EXPECT_EQ(stack.size(), 1u) << "ranges left open on thread " << tid;
  return rec;
}

// The "measured steps" range of the main thread and everything under it.
std::string measured_tree(const Record& rec, const Node** measured = nullptr) {
  const auto it = rec.threads.find(rec.pid);
  if (it == rec.threads.end()) return "(no ranges on the main thread)";
  for (const auto& top : it->second.children)
    if (top.name == "measured steps") {
      if (measured) *measured = &top;
      std::string out;
      render(top, 0, out);
      return out;
    }
  return "(no 'measured steps' range on the main thread)";
}

// Ranges named `name` on threads other than the main one, in start order.
std::vector<const Node*> other_threads(const Record& rec, const std::string& prefix) {
  std::vector<const Node*> out;
  std::function<void(const Node&)> walk = [&](const Node& n) {
    if (n.name.rfind(prefix, 0) == 0) out.push_back(&n);
    for (const auto& c : n.children) walk(c);
  };
  for (const auto& [tid, root] : rec.threads)
    if (tid != rec.pid) walk(root);
  std::sort(out.begin(), out.end(), [](const Node* a, const Node* b) { return a->begin_ns < b->begin_ns; });
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

  // Runs `ladder measure` (no extra profiled step) and returns the record.
  Record run(const std::string& args) {
    const fs::path record = dir_ / "nvtx.log";
    const std::string cmd = "NVTX_INJECTION64_PATH=" + std::string(NVTX_RECORDER) +
                            " LADDER_NVTX_RECORD=" + record.string() + " " + LADDER_BIN +
                            " measure --preset tiny --threads 1 --no-op-count --quiet --out " +
                            (dir_ / "run").string() + " " + args + " 2>&1";
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    return read_record(record);
  }
  // One measured step on the CPU, no warmup: the main thread's tree.
  std::string one_cpu_step(const std::string& args) {
    return measured_tree(run("--device cpu --steps 1 --warmup 0 " + args));
  }

  fs::path dir_;
};

// ---- CPU -----------------------------------------------------------------------------

// Each block's attention has a range of its own in forward (tiny: 2 blocks).
TEST_F(Nvtx, OneStepRangeTree) {
  EXPECT_EQ(one_cpu_step("--rung fp32"),
            "measured steps\n"
            "  step fp32\n"
            "    data\n"
            "    forward\n"
            "      attention\n"
            "      attention\n"
            "    backward\n"
            "    optimizer\n");
}

TEST_F(Nvtx, LayerRangesInForwardAndBackward) {
  // Backward visits the blocks in reverse.
  EXPECT_EQ(one_cpu_step("--rung fp32 --layer-ranges"),
            "measured steps\n"
            "  step fp32\n"
            "    data\n"
            "    forward\n"
            "      layer 0\n"
            "        attention\n"
            "      layer 1\n"
            "        attention\n"
            "    backward\n"
            "      layer 1\n"
            "      layer 0\n"
            "    optimizer\n");
}

TEST_F(Nvtx, FusedPathLayerRanges) {
  // The fused rung carries two streams across each block boundary.
  EXPECT_EQ(one_cpu_step("--rung fused --layer-ranges"),
            "measured steps\n"
            "  step fused\n"
            "    data\n"
            "    forward\n"
            "      layer 0\n"
            "        attention\n"
            "      layer 1\n"
            "        attention\n"
            "    backward\n"
            "      layer 1\n"
            "      layer 0\n"
            "    optimizer\n");
}

TEST_F(Nvtx, GradAccumRepeatsEachMicroStep) {
  // tiny: 1024 tokens per step / (B4 x T64) = 4 micro-steps, one optimizer step.
  std::string micro;
  for (int i = 0; i < 4; ++i) micro += "    data\n    forward\n      attention\n      attention\n    backward\n";
  EXPECT_EQ(one_cpu_step("--rung grad-accum"), "measured steps\n  step grad-accum\n" + micro + "    optimizer\n");
}

// ---- CUDA ----------------------------------------------------------------------------

TEST_F(Nvtx, CudaEagerBackwardLayersAreOnTheAutogradThread) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  const Record rec = run("--device cuda --rung fp32 --layer-ranges --steps 1 --warmup 1");
  const Node* measured = nullptr;
  EXPECT_EQ(measured_tree(rec, &measured),
            "measured steps\n"
            "  step fp32\n"
            "    data\n"
            "    forward\n"
            "      layer 0\n"
            "        attention\n"
            "      layer 1\n"
            "        attention\n"
            "    backward\n"
            "    optimizer\n");
  ASSERT_NE(measured, nullptr);
  const Node* backward = find(*measured, "backward");
  ASSERT_NE(backward, nullptr);
  // The measured step's backward layers: on the device thread, in reverse,
  // inside the main thread's backward range.
  std::vector<std::string> layers;
  for (const Node* n : other_threads(rec, "layer "))
    if (n->begin_ns >= backward->begin_ns && n->end_ns <= backward->end_ns) layers.push_back(n->name);
  EXPECT_EQ(layers, (std::vector<std::string>{"layer 1", "layer 0"}));
}

TEST_F(Nvtx, CudaGraphStepIsOneReplayRange) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // Step 0 (warmup) captures the graph; the measured step replays it.
  const Record rec = run("--device cuda --rung fused --layer-ranges --steps 1 --warmup 1");
  const Node* measured = nullptr;
  EXPECT_EQ(measured_tree(rec, &measured),
            "measured steps\n"
            "  step fused\n"
            "    data\n"
            "    forward+backward (CUDA graph)\n"
            "    optimizer\n");
  ASSERT_NE(measured, nullptr);
  for (const Node* n : other_threads(rec, "layer "))
    EXPECT_FALSE(n->begin_ns >= measured->begin_ns && n->end_ns <= measured->end_ns)
        << "a replay runs no host code, yet '" << n->name << "' was opened during the measured step";
}

TEST_F(Nvtx, CudaFusedAdamwStepIsOneGraphWithTheOptimizer) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // With fused AdamW the clip, the optimizer and the zeroing are in the graph.
  EXPECT_EQ(measured_tree(run("--device cuda --rung fused-adamw --steps 1 --warmup 1")),
            "measured steps\n"
            "  step fused-adamw\n"
            "    data\n"
            "    forward+backward+optimizer (CUDA graph)\n");
}

TEST_F(Nvtx, CudaGradAccumReplaysEachMicroStep) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  // Three forward+backward replays, then the last micro-step's graph, which
  // also runs the optimizer (grad-accum has fused AdamW).
  std::string micro;
  for (int i = 0; i < 3; ++i) micro += "    data\n    forward+backward (CUDA graph)\n";
  EXPECT_EQ(measured_tree(run("--device cuda --rung grad-accum --steps 1 --warmup 1")),
            "measured steps\n  step grad-accum\n" + micro +
                "    data\n    forward+backward+optimizer (CUDA graph)\n");
}

}  // namespace
