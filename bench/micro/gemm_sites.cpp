// bench/micro/gemm_sites.cpp: every epilogue GEMM site of a step
// (variants/gemm_sites.h), each way it can run, at the preset's shape
// (gpt2-124m B16 T1024 on CUDA: the fused rung's GEMMs, one by one).
//
// The candidates, in bf16 (the precision the fused rung computes in):
//   pytorch         what PyTorch does: addmm, then gelu; mm and sum; mm,
//                   gelu_backward and sum (the reference a planner keeps
//                   unless another is faster)
//   lt              the cuBLASLt epilogue as the step runs it
//                   (variants/cuda/cublaslt_matmul.h): the heuristic's first
//                   algorithm, torch's cuBLASLt workspace (1 MiB in torch 2.11)
//   lt-ws32         the same with a 32 MiB workspace ladder owns (ATen's
//                   cuBLAS calls get 32 MiB): can split-K help the dW GEMMs?
//   lt-fp32-bias    bias-gradient sites only: the GEMM without its reduction
//                   epilogue (DEFAULT, DGELU), the bias gradient summed apart
//                   in fp32 (llm.c's way)
// Each candidate is checked first against the same op in fp64 from the same
// bf16 inputs (relative L2 within bf16's tolerance, every output), then
// timed. CUDA runs all four; a CPU runs pytorch only (cuBLASLt is CUDA's).
#include <fmt/format.h>

#include "bench/micro/families.h"
#include "variants/gemm_sites.h"

#ifdef LADDER_WITH_CUDA
#include "variants/cuda/cublaslt_matmul.h"
#endif

namespace ladder::micro {
namespace {

constexpr const char* kGelu = "tanh";
constexpr size_t kOwnWorkspace = size_t(32) << 20;

// A site's operands (row-major, as variants/fused_linear.cpp holds them).
struct Operands {
  torch::Tensor x, w, b;  // forward: x (N, I), w (O, I), b (O)
  torch::Tensor dy, pre;  // weight grad: dy (N, O), x; dgelu: dy (N, O), w (O, I), pre (N, I)
};

Operands draw(const GemmSite& s, const torch::Device& device, torch::ScalarType dtype, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto r = [&](std::vector<int64_t> sizes, double scale) {
    return (torch::randn(sizes, gen) * scale).to(dtype).to(device);
  };
  return {r({s.rows, s.in}, 1.0), r({s.out, s.in}, 0.02), r({s.out}, 0.02), r({s.rows, s.out}, 1.0),
          r({s.rows, s.in}, 1.0)};
}

// The site's op by ATen in whatever dtype its operands are: its outputs.
std::vector<torch::Tensor> aten_op(const GemmSite& s, const Operands& o) {
  switch (s.role) {
    case GemmRole::kForwardBias: return {at::addmm(o.b, o.x, o.w.t())};
    case GemmRole::kForwardBiasGelu: {
      auto pre = at::addmm(o.b, o.x, o.w.t());
      return {at::gelu(pre, kGelu), pre};
    }
    case GemmRole::kWeightBiasGrad: return {o.dy.t().mm(o.x), o.dy.sum(0)};
    case GemmRole::kInputGradDgelu: {
      auto dpre = at::gelu_backward(o.dy.mm(o.w), o.pre, kGelu);
      return {dpre, dpre.sum(0)};
    }
  }
  return {};
}

Operands to_double(const Operands& o) {
  auto d = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
  return {d(o.x), d(o.w), d(o.b), d(o.dy), d(o.pre)};
}

using Candidate = std::function<std::vector<torch::Tensor>(const GemmSite&, const Operands&)>;

#ifdef LADDER_WITH_CUDA
void require(bool ok, const std::string& why) {
  if (!ok) throw std::runtime_error("cuBLASLt has no kernel here: " + why);
}

// The epilogue GEMM as the step runs it.
std::vector<torch::Tensor> lt_op(const GemmSite& s, const Operands& o) {
  std::string why;
  switch (s.role) {
    case GemmRole::kForwardBias: {
      auto y = torch::empty({s.rows, s.out}, o.x.options());
      require(fused::cuda::lt_linear_forward(o.x, o.w, o.b, y, nullptr, &why), why);
      return {y};
    }
    case GemmRole::kForwardBiasGelu: {
      auto h = torch::empty({s.rows, s.out}, o.x.options()), pre = torch::empty_like(h);
      require(fused::cuda::lt_linear_forward(o.x, o.w, o.b, h, &pre, &why), why);
      return {h, pre};
    }
    case GemmRole::kWeightBiasGrad: {
      auto dw = torch::empty({s.out, s.in}, o.x.options()), db = torch::empty({s.out}, o.x.options());
      require(fused::cuda::lt_weight_bias_grad(o.dy, o.x, dw, db, &why), why);
      return {dw, db};
    }
    case GemmRole::kInputGradDgelu: {
      auto dpre = torch::empty({s.rows, s.in}, o.x.options()), db = torch::empty({s.in}, o.x.options());
      require(fused::cuda::lt_input_grad_dgelu(o.dy, o.w, o.pre, dpre, db, &why), why);
      return {dpre, db};
    }
  }
  return {};
}

// The GEMM without its bias-gradient epilogue; the bias gradient in fp32 apart.
std::vector<torch::Tensor> lt_fp32_bias_op(const GemmSite& s, const Operands& o) {
  std::string why;
  if (s.role == GemmRole::kWeightBiasGrad) {
    auto dw = torch::empty({s.out, s.in}, o.x.options());
    require(fused::cuda::lt_weight_grad(o.dy, o.x, dw, &why), why);
    return {dw, o.dy.sum(0, /*keepdim=*/false, torch::kFloat)};
  }
  auto dpre = torch::empty({s.rows, s.in}, o.x.options());
  require(fused::cuda::lt_input_grad_dgelu_only(o.dy, o.w, o.pre, dpre, &why), why);
  return {dpre, dpre.sum(0, /*keepdim=*/false, torch::kFloat)};
}
#endif

struct Named {
  std::string name;
  Candidate run;
  size_t workspace = 0;  // bytes of ladder's own cuBLASLt workspace; 0: torch's
};

std::vector<Named> candidates(const GemmSite& s, const torch::Device& device) {
  std::vector<Named> out = {{"pytorch", aten_op}};
#ifdef LADDER_WITH_CUDA
  if (device.is_cuda()) {
    out.push_back({"lt", lt_op});
    out.push_back({"lt-ws32", lt_op, kOwnWorkspace});
    if (s.role == GemmRole::kWeightBiasGrad || s.role == GemmRole::kInputGradDgelu)
      out.push_back({"lt-fp32-bias", lt_fp32_bias_op});
  }
#else
  (void)s;
  (void)device;
#endif
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
  const Operands o = draw(s, device, torch::kBFloat16, seed);
  const WorkspaceScope workspace(c.workspace);
  const CheckResult& check = check_once(key, [&] {
    const auto got = c.run(s, o), want = aten_op(s, to_double(o));
    std::vector<std::pair<torch::Tensor, torch::Tensor>> pairs;
    for (size_t i = 0; i < got.size() && i < want.size(); ++i) pairs.push_back({got[i], want[i]});
    return compare_all(pairs, tolerance_for(Precision::kBF16),
                       fmt::format("{} {} against fp64 from the same bf16 inputs: every output", s.describe(),
                                   c.name));
  });
  if (!passed_check(state, check, s.describe())) return;
  const double secs = time_iterations(state, device, [&] { c.run(s, o); });
  set_flop_counters(state, s.flops(), secs, device, Precision::kBF16);
}

void register_gemm_sites(const MicroConfig& cfg) {
  for (const auto& device : cfg.devices) {
    const int64_t rows = cfg.batch_for(device) * cfg.seq;
    for (const GemmSite& s : gemm_sites(cfg.model, rows)) {
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

const Family kGemmSitesFamily{"gemm_sites",
                              "fused-linear's epilogue GEMMs, each site of the step each way it can run "
                              "(PyTorch's ops, cuBLASLt's epilogue, with a 32 MiB workspace, the bias gradient "
                              "in fp32 apart)",
                              register_gemm_sites, nullptr};

}  // namespace ladder::micro
