// variants/cuda/cublaslt_matmul.cpp: cuBLASLt GEMMs with epilogues (see
// cublaslt_matmul.h).
//
// cuBLASLt is column-major; a row-major (r, c) matrix is a column-major (c, r)
// one with leading dimension c. So every product below is written for the
// transposes: row-major Y = X W^T is column-major Y^T = W X^T, and so on; the
// shape comments are the row-major ones the caller sees.
#include "variants/cuda/cublaslt_matmul.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <tuple>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <fmt/format.h>

namespace ladder::fused::cuda {

namespace {

#define LADDER_CUBLAS_CHECK(expr)                                                                         \
  do {                                                                                                    \
    cublasStatus_t ladder_st_ = (expr);                                                                   \
    if (ladder_st_ != CUBLAS_STATUS_SUCCESS)                                                              \
      throw std::runtime_error(fmt::format("{}:{}: {} failed: {} ({})", __FILE__, __LINE__, #expr,        \
                                           cublasLtGetStatusString(ladder_st_), int(ladder_st_)));          \
  } while (0)

const char* epilogue_name(cublasLtEpilogue_t e) {
  switch (e) {
    case CUBLASLT_EPILOGUE_BIAS: return "BIAS";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: return "GELU_AUX_BIAS";
    case CUBLASLT_EPILOGUE_BGRADB: return "BGRADB";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: return "DGELU_BGRAD";
    case CUBLASLT_EPILOGUE_DGELU: return "DGELU";
    case CUBLASLT_EPILOGUE_DEFAULT: return "DEFAULT";
    default: return "other";
  }
}

// The largest power of two (<= 256) dividing the address: cuBLASLt's
// heuristic must not assume more alignment than the pointers have.
uint32_t alignment_bytes(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 1;
  while (align < 256 && a % (2 * align) == 0) align *= 2;
  return align;
}

// RAII owners for the descriptors of one call.
struct MatmulDesc {
  cublasLtMatmulDesc_t d = nullptr;
  ~MatmulDesc() { if (d) cublasLtMatmulDescDestroy(d); }
};
struct Layout {
  cublasLtMatrixLayout_t l = nullptr;
  ~Layout() { if (l) cublasLtMatrixLayoutDestroy(l); }
};
struct Preference {
  cublasLtMatmulPreference_t p = nullptr;
  ~Preference() { if (p) cublasLtMatmulPreferenceDestroy(p); }
};

// One GEMM, column-major: D (m, n) = op(A) (m, k) op(B) (k, n), with `epilogue`.
// A is stored (k, m) when transa, else (m, k); B is stored (n, k) when transb,
// else (k, n). `bias` is the bias (BIAS, GELU_AUX_BIAS) or the bias-gradient
// output (BGRADB, DGELU_BGRAD); `aux` the GELU pre-activation (m, n), ld m.
struct Gemm {
  cublasLtEpilogue_t epilogue;
  bool transa, transb;
  int64_t m, n, k;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* d;
  int64_t ldd;
  void* bias = nullptr;
  void* aux = nullptr;
  int64_t ldaux = 0;
};

// Heuristic results per (shape, dtype, epilogue, alignments, compute type), or
// "none": the query costs tens of microseconds on the host and the shapes of
// a training step repeat every micro-step.
using AlgoKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int, int, uint32_t, uint32_t, uint32_t,
                           uint32_t, uint32_t, uint32_t, int64_t>;
struct AlgoEntry {
  bool found = false;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;  // the heuristic's answer
  cublasLtMatmulAlgo_t algo{};
};
std::mutex g_algo_mutex;
std::map<AlgoKey, AlgoEntry> g_algos;

// set_lt_workspace_bytes's buffer and the device it is on (-1: none).
std::mutex g_workspace_mutex;
at::Tensor g_workspace;
int g_workspace_device = -1;

// {pointer, bytes} of the workspace for a GEMM on the current device.
std::pair<void*, size_t> workspace() {
  {
    std::lock_guard<std::mutex> lock(g_workspace_mutex);
    if (g_workspace.defined() && g_workspace_device == int(c10::cuda::current_device()))
      return {g_workspace.data_ptr(), size_t(g_workspace.numel())};
  }
  return {at::cuda::getCUDABlasLtWorkspace(), at::cuda::getCUDABlasLtWorkspaceSize()};
}

bool run_gemm(const Gemm& g, at::ScalarType dtype, std::string* why_not) {
  const cudaDataType_t dt = dtype == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  // float32 inputs follow the float32 matmul precision (the tf32 switch);
  // bf16 always accumulates in fp32.
  const bool tf32 = dtype == at::kFloat && at::globalContext().allowTF32CuBLAS();
  const cublasComputeType_t compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale_type = CUDA_R_32F;

  MatmulDesc desc;
  LADDER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc.d, compute, scale_type));
  const cublasOperation_t opa = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  LADDER_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof(g.epilogue)));
  if (g.bias) {
    LADDER_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    LADDER_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &dt, sizeof(dt)));
  }
  if (g.aux) {
    LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux,
                                                       sizeof(g.aux)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &g.ldaux,
                                                       sizeof(g.ldaux)));
  }

  Layout la, lb, ld;
  LADDER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la.l, dt, g.transa ? g.k : g.m, g.transa ? g.m : g.k, g.lda));
  LADDER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb.l, dt, g.transb ? g.n : g.k, g.transb ? g.k : g.n, g.ldb));
  LADDER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld.l, dt, g.m, g.n, g.ldd));  // C and D (beta = 0)

  const auto [workspace_ptr, workspace_bytes] = workspace();
  const uint32_t align_a = alignment_bytes(g.a), align_b = alignment_bytes(g.b), align_d = alignment_bytes(g.d);
  const uint32_t align_bias = g.bias ? alignment_bytes(g.bias) : 256;
  const uint32_t align_aux = g.aux ? alignment_bytes(g.aux) : 256;  // the heuristic reads this pointer too
  // Split-K partial sums: under bf16 autocast the step asks for no reduced-
  // precision reduction (variants/precision.cpp), which reaches ATen's GEMMs
  // but not these: restrict cuBLASLt's reduction schemes as PyTorch's own
  // cuBLASLt path does (fp32 partials, or no split-K), or a weight-gradient
  // GEMM (K = B*T, a small output) could sum its split-K partials in bf16.
  uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  if (dtype == at::kBFloat16) {
    switch (at::globalContext().allowBF16ReductionCuBLAS()) {
      case at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK: break;
      case at::CuBLASReductionOption::DisallowReducedPrecisionAllowSplitK:
        reduction_mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_NONE;
        break;
      case at::CuBLASReductionOption::DisallowReducedPrecisionDisallowSplitK:
        reduction_mask = CUBLASLT_REDUCTION_SCHEME_NONE;
        break;
    }
  }
  const AlgoKey key{int(g.epilogue), int(g.transa), int(g.transb), g.m, g.n, g.k, int(dt), int(compute),
                    align_a, align_b, align_d, align_bias, align_aux, reduction_mask, int64_t(workspace_bytes)};
  AlgoEntry entry;
  bool cached = false;
  {
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    auto it = g_algos.find(key);
    if (it != g_algos.end()) {
      entry = it->second;
      cached = true;
    }
  }
  if (!cached) {
    Preference pref;
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.p));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                             &workspace_bytes, sizeof(workspace_bytes)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                             &align_a, sizeof(align_a)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                             &align_b, sizeof(align_b)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                             &align_d, sizeof(align_d)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                             &align_d, sizeof(align_d)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                             &reduction_mask, sizeof(reduction_mask)));
    cublasLtMatmulHeuristicResult_t result{};
    int returned = 0;
    const cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(at::cuda::getCurrentCUDABlasLtHandle(), desc.d, la.l, lb.l, ld.l, ld.l,
                                       pref.p, 1, &result, &returned);
    // NOT_SUPPORTED (or no result) means this epilogue has no kernel here, and
    // some epilogue/type/compute combinations are refused as INVALID_VALUE
    // instead: either way the caller falls back (counted, with the status).
    // Anything else is an error.
    if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED && st != CUBLAS_STATUS_INVALID_VALUE)
      LADDER_CUBLAS_CHECK(st);
    entry.found = st == CUBLAS_STATUS_SUCCESS && returned > 0;
    entry.status = st;
    if (entry.found) entry.algo = result.algo;
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    g_algos.emplace(key, entry);
  }
  if (!entry.found) {
    if (why_not)
      *why_not = fmt::format(
          "cuBLASLt has no algorithm for epilogue {} at m={} n={} k={} ({}, alignment {}/{}/{} B, reduction schemes "
          "0x{:x}; heuristic: {})",
          epilogue_name(g.epilogue), g.m, g.n, g.k, dtype == at::kBFloat16 ? "bf16" : "fp32", align_a, align_b,
          align_d, reduction_mask, cublasLtGetStatusString(entry.status));
    return false;
  }
  const float alpha = 1.0f, beta = 0.0f;
  LADDER_CUBLAS_CHECK(cublasLtMatmul(at::cuda::getCurrentCUDABlasLtHandle(), desc.d, &alpha, g.a, la.l, g.b, lb.l,
                                     &beta, g.d, ld.l, g.d, ld.l, &entry.algo, workspace_ptr, workspace_bytes,
                                     at::cuda::getCurrentCUDAStream().stream()));
  return true;
}

void check_matrix(const at::Tensor& t, const char* name, at::ScalarType dtype) {
  TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == dtype, "cublaslt_matmul: ", name,
              " must be a contiguous CUDA ", dtype, " tensor, got ", t.scalar_type(), " on ", t.device(),
              t.is_contiguous() ? "" : " (not contiguous)");
}

}  // namespace

bool lt_linear_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y,
                       at::Tensor* pre, std::string* why_not) {
  const auto dtype = x.scalar_type();
  for (auto [t, name] : {std::pair{&x, "x"}, {&weight, "weight"}, {&bias, "bias"}, {&y, "y"}})
    check_matrix(*t, name, dtype);
  const bool gelu = pre != nullptr && pre->defined();
  if (gelu) check_matrix(*pre, "pre", dtype);
  const int64_t N = x.size(0), I = x.size(1), O = weight.size(0);
  // Column-major Y^T (O, N) = W (O, I) . X^T (I, N): A = W stored (I, O), op T;
  // B = X stored (I, N), op N.
  Gemm g{gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS, /*transa=*/true, /*transb=*/false,
         /*m=*/O, /*n=*/N, /*k=*/I, weight.data_ptr(), /*lda=*/I, x.data_ptr(), /*ldb=*/I, y.data_ptr(),
         /*ldd=*/O, bias.data_ptr()};
  if (gelu) {
    g.aux = pre->data_ptr();
    g.ldaux = O;
  }
  return run_gemm(g, dtype, why_not);
}

bool lt_weight_bias_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, at::Tensor& dbias,
                         std::string* why_not) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&x, "x"}, {&dweight, "dweight"}, {&dbias, "dbias"}})
    check_matrix(*t, name, dtype);
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  // Column-major dW^T (I, O) = X^T (I, N) . dY (N, O): A = X stored (I, N), op N;
  // B = dY stored (O, N), op T. BGRADB reduces B over k = N: db (O).
  Gemm g{CUBLASLT_EPILOGUE_BGRADB, /*transa=*/false, /*transb=*/true, /*m=*/I, /*n=*/O, /*k=*/N, x.data_ptr(),
         /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dweight.data_ptr(), /*ldd=*/I, dbias.data_ptr()};
  return run_gemm(g, dtype, why_not);
}

bool lt_input_grad_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre, at::Tensor& dpre,
                         at::Tensor& dbias, std::string* why_not) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] :
       {std::pair{&dy, "dy"}, {&weight, "weight"}, {&pre, "pre"}, {&dpre, "dpre"}, {&dbias, "dbias"}})
    check_matrix(*t, name, dtype);
  const int64_t N = dy.size(0), O = dy.size(1), I = weight.size(1);
  // Column-major dPre^T (I, N) = W^T (I, O) . dY^T (O, N): A = W stored (I, O),
  // op N; B = dY stored (O, N), op N. DGELU multiplies by gelu'(pre) (aux, ld I)
  // and BGRAD reduces the result over its columns (the N rows): db (I).
  Gemm g{CUBLASLT_EPILOGUE_DGELU_BGRAD, /*transa=*/false, /*transb=*/false, /*m=*/I, /*n=*/N, /*k=*/O,
         weight.data_ptr(), /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dpre.data_ptr(), /*ldd=*/I, dbias.data_ptr(),
         pre.data_ptr(), /*ldaux=*/I};
  return run_gemm(g, dtype, why_not);
}

bool lt_weight_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, std::string* why_not) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&x, "x"}, {&dweight, "dweight"}}) check_matrix(*t, name, dtype);
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  // As lt_weight_bias_grad, without BGRADB's reduction of B.
  Gemm g{CUBLASLT_EPILOGUE_DEFAULT, /*transa=*/false, /*transb=*/true, /*m=*/I, /*n=*/O, /*k=*/N, x.data_ptr(),
         /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dweight.data_ptr(), /*ldd=*/I};
  return run_gemm(g, dtype, why_not);
}

bool lt_input_grad_dgelu_only(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre,
                              at::Tensor& dpre, std::string* why_not) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&weight, "weight"}, {&pre, "pre"}, {&dpre, "dpre"}})
    check_matrix(*t, name, dtype);
  const int64_t N = dy.size(0), O = dy.size(1), I = weight.size(1);
  // As lt_input_grad_dgelu, without BGRAD's reduction of the result.
  Gemm g{CUBLASLT_EPILOGUE_DGELU, /*transa=*/false, /*transb=*/false, /*m=*/I, /*n=*/N, /*k=*/O,
         weight.data_ptr(), /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dpre.data_ptr(), /*ldd=*/I, nullptr,
         pre.data_ptr(), /*ldaux=*/I};
  return run_gemm(g, dtype, why_not);
}

void set_lt_workspace_bytes(size_t bytes) {
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  if (bytes == 0) {
    g_workspace = at::Tensor();
    g_workspace_device = -1;
    return;
  }
  // 256-byte aligned, as cuBLASLt wants its workspace; from the caching allocator.
  g_workspace = at::empty({int64_t(bytes)}, at::TensorOptions().dtype(at::kByte).device(at::kCUDA));
  g_workspace_device = int(c10::cuda::current_device());
}

size_t lt_workspace_bytes() {
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  return g_workspace.defined() ? size_t(g_workspace.numel()) : 0;
}

}  // namespace ladder::fused::cuda
