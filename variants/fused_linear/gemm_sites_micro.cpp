// variants/fused_linear/gemm_sites_micro.cpp: the GEMM sites a step's planner chooses among
// (variants/planners/gemm_sites.h), each way it can run, at the preset's shape
// (gpt2-124m B16 T1024 on CUDA: the fused rung's GEMMs, one by one). On CUDA
// the epilogue sites (gemm_sites), on a CPU every GEMM of the top rung's
// step (step_sites: the classifier's at the padded vocabulary too).
//
// On a CPU, in the dtype the top rung computes in there (fp32 unless this
// CPU's bf16 matmuls are at least as fast: --cpu-bf16 auto's probe):
//   pytorch         A, PyTorch's ops
//   into-grad       F, weight-gradient sites: dW added (beta = 1) into an
//                   fp32 buffer by addmm_ (only where the step runs fp32)
//   onednn          G, every site: oneDNN's matmul where ATen's mm runs MKL
//                   (at the weight gradients since GEMM planner 5)
// On CUDA, in bf16 (the precision the fused rung computes in), as the
// step and its GEMM planner run them (variants/planners/gemm_candidates.h), each at
// the heuristic's first algorithm:
//   pytorch         A, what PyTorch does: addmm, then gelu; mm and sum; mm
//                   and gelu_backward (the reference the planner keeps
//                   unless another is faster)
//   lt              B, the cuBLASLt epilogue, torch's cuBLASLt workspace
//                   (1 MiB in torch 2.11)
//   lt-ws32         B with a 32 MiB workspace ladder owns (ATen's cuBLAS
//                   calls get 32 MiB; the planner's): can split-K help the dW GEMMs?
//   lt-fp32-bias    C, weight-gradient sites: the GEMM without its
//                   reduction epilogue (DEFAULT), the bias gradient summed
//                   apart in fp32 (llm.c's way)
//   lt-into-grad    D, weight-gradient sites: dW accumulated (beta = 1) into
//                   an fp32 gradient buffer, the bias gradient in fp32 apart
//   lt-into-grad-bgradb  E, as D with the bias gradient by the BGRADB
//                   epilogue, in fp32
// At the weight-gradient sites every way is timed as the step with
// flat-grads runs it: dW lands in an fp32 buffer (A, B and C's bf16 dW is
// added into it after the GEMM; D and E write it there).
// Each candidate is checked first against the same op in fp64 from the same
// inputs (relative L2 within the dtype's tolerance, every output), then
// timed.
#include <fmt/format.h>

#include "bench/measure/roofline/roofline.h"
#include "bench/micro/families.h"
#include "variants/planners/gemm_candidates.h"
#include "variants/planners/gemm_sites.h"

#ifdef LADDER_WITH_CUDA
#include "variants/cuda/cublaslt_matmul.h"
#endif

namespace ladder::micro {
namespace {

constexpr size_t kOwnWorkspace = size_t(32) << 20;

struct Named {
  std::string name;
  GemmChoice choice;
  size_t workspace = 0;  // bytes of ladder's own cuBLASLt workspace; 0: torch's
};

// The dtype the top rung's GEMMs run in on `device`: bf16 on CUDA; on a CPU
// fp32 where its bf16 matmuls are slower (--cpu-bf16 auto), probed once.
Precision site_precision(const torch::Device& device) {
  if (device.is_cuda()) return Precision::kBF16;
  static const bool bf16_slower = !cpu_bf16_slower(std::nullopt, device).empty();
  return bf16_slower ? Precision::kFP32 : Precision::kBF16;
}

// The candidates of variants/planners/gemm_candidates.h at their heuristic's first
// algorithm (the planner times the others), and B with a 32 MiB workspace.
std::vector<Named> candidates(const GemmSite& s, const torch::Device& device) {
  std::vector<Named> out = {{"pytorch", {}}};
  if (!device.is_cuda()) {  // F where the step computes in fp32 (addmm_ takes one dtype; the buffer is fp32)
    if (site_precision(device) == Precision::kFP32 && method_applies(GemmMethod::kIntoGrad, s.role, true))
      out.push_back({"into-grad", {GemmMethod::kIntoGrad, 0}});
    if (gemm::onednn_available() && method_applies(GemmMethod::kOnednn, s.role, true))
      out.push_back({"onednn", {GemmMethod::kOnednn, 0}});  // G: every site (planner 5: the weight gradients too)
    return out;
  }
  out.push_back({"lt", {GemmMethod::kLt, 0}});
  out.push_back({"lt-ws32", {GemmMethod::kLt, 0}, kOwnWorkspace});
  if (method_applies(GemmMethod::kLtSplitBias, s.role, false))
    out.push_back({"lt-fp32-bias", {GemmMethod::kLtSplitBias, 0}});
  if (method_applies(GemmMethod::kLtIntoGrad, s.role, true)) {
    out.push_back({"lt-into-grad", {GemmMethod::kLtIntoGrad, 0}});
    out.push_back({"lt-into-grad-bgradb", {GemmMethod::kLtIntoGradBgradb, 0}});
  }
  return out;
}

// For the benchmark's lifetime, ladder's own cuBLASLt workspace of `bytes` (0: torch's).
class WorkspaceScope {
 public:
  explicit WorkspaceScope(size_t bytes) : bytes_(bytes) {
#ifdef LADDER_WITH_CUDA
    if (bytes_) fused::cuda::set_lt_workspace_bytes(bytes_);
#endif
  }
  ~WorkspaceScope() {
#ifdef LADDER_WITH_CUDA
    if (bytes_) fused::cuda::set_lt_workspace_bytes(0);
#endif
  }
  WorkspaceScope(const WorkspaceScope&) = delete;
  WorkspaceScope& operator=(const WorkspaceScope&) = delete;

 private:
  size_t bytes_;
};

void bench_site(benchmark::State& state, const std::string& key, const torch::Device& device, const GemmSite& s,
                const Named& c, uint64_t seed) {
  torch::NoGradGuard no_grad;
  const Precision precision = site_precision(device);
  const gemm::SiteOperands o = gemm::draw_operands(s, device, dtype_for(precision), seed);
  const WorkspaceScope workspace(c.workspace);
  const CheckResult& check = check_once(key, [&] {
    gemm::Outcome out;
    const auto got = gemm::run_site(s, o, c.choice, &out);
    // A way cuBLASLt has no kernel for on this GPU (D and E: none into the
    // fp32 buffer, though their fallback ran) is skipped and said, not failed.
    if (auto why = gemm::not_as_asked(c.choice, out, o.grad.defined()); !why.empty())
      return unavailable_check(why);
    const auto want = gemm::run_site(s, gemm::to_double(o), {});
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) pairs.push_back({got[i], want[i]});
    return compare_all(pairs, tolerance_for(precision),
                       fmt::format("{} {} against fp64 from the same {} inputs: every output", s.describe(), c.name,
                                   precision_name(precision)));
  });
  if (!passed_check(state, check, s.describe())) return;
  const double secs = time_iterations(state, device, [&] { gemm::call_site(s, o, c.choice); });
  set_flop_counters(state, s.flops(), secs, device, precision);
}

void register_gemm_sites(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t rows = cfg.batch_for(device) * cfg.seq;
    for (const GemmSite& s :
         planned_sites(cfg.model, rows, padded_vocab(cfg.model.vocab_size), /*gelu_epilogue=*/true, device.is_cuda())) {
      const std::string site = fmt::format("{}/{}/{}/m:{}/n:{}/k:{}", s.layer, s.epilogue(), device_tag(device),
                                           s.m(), s.n(), s.k());
      for (const Named& c : candidates(s, device)) {
        const std::string name = fmt::format("gemm_sites/{}/{}", site, c.name);
        add_benchmark(name, [=](benchmark::State& st) { bench_site(st, name, device, s, c, cfg.seed); });
      }
    }
  }
}

}  // namespace

extern const Family gemm_sites_family{"gemm_sites",
                                      "the GEMM planner's sites, each way it can run: on CUDA fused-linear's epilogue "
                                      "GEMMs (PyTorch's ops, cuBLASLt's epilogue, with a 32 MiB workspace, the bias "
                                      "gradient in fp32 apart, dW into an fp32 gradient buffer, with or without the "
                                      "bias epilogue); on a CPU every GEMM of the step in its dtype (PyTorch's ops, dW"
                                      " into the fp32 buffer by addmm_, oneDNN's matmul)",
                                      register_gemm_sites, nullptr, &switches::lt_epilogues};

}  // namespace ladder::micro
