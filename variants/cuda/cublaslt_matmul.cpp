// variants/cuda/cublaslt_matmul.cpp: cuBLASLt GEMMs with epilogues (see
// cublaslt_matmul.h).
//
// cuBLASLt is column-major; a row-major (r, c) matrix is a column-major (c, r)
// one with leading dimension c. So every product below is written for the
// transposes: row-major Y = X W^T is column-major Y^T = W X^T, and so on; the
// shape comments are the row-major ones the caller sees.
#include "variants/cuda/cublaslt_matmul.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAStream.h>
#include <cublasLt.h>
#include <fmt/format.h>

#include "variants/config/precision.h"
#include "variants/config/precision_name.h"

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

// The name of tile enumerator T as the compiler writes it in this function's
// signature: GCC "... [with cublasLtMatmulTile_t T = CUBLASLT_MATMUL_TILE_128x256]",
// Clang "... [T = CUBLASLT_MATMUL_TILE_128x256]"; a value with no enumerator
// is written as a cast, "(cublasLtMatmulTile_t)700". cublasLt.h has no
// function that names a tile, so the names come from the enum itself rather
// than from a copy of its 600-odd entries.
template <cublasLtMatmulTile_t T>
const char* tile_signature() {
  return __PRETTY_FUNCTION__;
}

template <size_t... I>
std::array<const char*, sizeof...(I)> tile_signatures(std::index_sequence<I...>) {
  return {tile_signature<cublasLtMatmulTile_t(I)>()...};
}

// "128x256" for CUBLASLT_MATMUL_TILE_128x256, "undefined" for
// CUBLASLT_MATMUL_TILE_UNDEFINED, "tile 700" for an id this header does not name.
std::string tile_name(int tile) {
  static const auto signatures = tile_signatures(std::make_index_sequence<size_t(CUBLASLT_MATMUL_TILE_END)>());
  constexpr std::string_view prefix = "CUBLASLT_MATMUL_TILE_";
  const std::string_view signature =
      tile >= 0 && size_t(tile) < signatures.size() ? std::string_view(signatures[size_t(tile)]) : "";
  const size_t at = signature.find(prefix);
  if (at == std::string_view::npos) return fmt::format("tile {}", tile);
  const size_t begin = at + prefix.size();
  const std::string_view name = signature.substr(begin, signature.find_first_of(";]", begin) - begin);
  return name == "UNDEFINED" ? "undefined" : std::string(name);
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

// One GEMM, column-major: D (m, n) = op(A) (m, k) op(B) (k, n) + beta D, with
// `epilogue`. A is stored (k, m) when transa, else (m, k); B is stored (n, k)
// when transb, else (k, n). `bias` is the bias (BIAS, GELU_AUX_BIAS) or the
// bias-gradient output (BGRADB); `aux` the GELU pre-activation
// (m, n), ld m. C is D itself (read only when beta is not 0), in A and B's
// dtype, or in fp32 when d_fp32.
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
  float beta = 0.0f;
  bool d_fp32 = false;
};

// Heuristic results per (shape, dtypes, beta, epilogue, alignments, compute
// type, workspace): up to kMaxLtAlgos, or none. The query costs tens of
// microseconds on the host and the shapes of a training step repeat every
// micro-step.
using AlgoKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int, int, float, int, uint32_t, uint32_t,
                           uint32_t, uint32_t, uint32_t, uint32_t, int64_t>;
struct AlgoEntry {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;  // the heuristic's answer
  int offered = 0;                                // results[0, offered) are the heuristic's, best first
  std::array<cublasLtMatmulHeuristicResult_t, kMaxLtAlgos> results{};
};
std::mutex g_algo_mutex;
std::map<AlgoKey, AlgoEntry> g_algos;  // entries are never erased, so references to them stay valid

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

// Split-K partial sums: under bf16 autocast the step asks for no reduced-
// precision reduction (variants/config/precision.cpp), which reaches ATen's GEMMs
// but not these: restrict cuBLASLt's reduction schemes as PyTorch's own
// cuBLASLt path does (fp32 partials, or no split-K), or a weight-gradient
// GEMM (K = B*T, a small output) could sum its split-K partials in bf16.
// Keyed on A and B's dtype, so a bf16 GEMM into an fp32 D follows the same
// setting (including its "no split-K" form).
uint32_t reduction_mask(at::ScalarType dtype) {
  if (dtype != at::kBFloat16) return CUBLASLT_REDUCTION_SCHEME_MASK;
  switch (at::globalContext().allowBF16ReductionCuBLAS()) {
    case at::CuBLASReductionOption::AllowReducedPrecisionWithSplitK: break;
    case at::CuBLASReductionOption::DisallowReducedPrecisionAllowSplitK:
      return CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_NONE;
    case at::CuBLASReductionOption::DisallowReducedPrecisionDisallowSplitK: return CUBLASLT_REDUCTION_SCHEME_NONE;
  }
  return CUBLASLT_REDUCTION_SCHEME_MASK;
}

// The descriptors of one GEMM and everything its heuristic query depends on.
struct GemmSetup {
  MatmulDesc desc;
  Layout a, b, cd;  // C and D share one layout: C is D
  cudaDataType_t ab_type = CUDA_R_32F, cd_type = CUDA_R_32F;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  uint32_t align_a = 256, align_b = 256, align_d = 256, align_bias = 256, align_aux = 256;
  uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  void* workspace_ptr = nullptr;
  size_t workspace_bytes = 0;
};

// Fills s's operation descriptor and layouts for g, with A and B in `dtype`.
void describe(const Gemm& g, at::ScalarType dtype, GemmSetup& s) {
  s.ab_type = dtype == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_32F;
  s.cd_type = g.d_fp32 ? CUDA_R_32F : s.ab_type;
  // float32 inputs follow the float32 matmul precision (the tf32 switch);
  // bf16 always accumulates in fp32. Alpha and beta are fp32 either way.
  const bool tf32 = dtype == at::kFloat && ::ladder::cuda_matmul_tf32();
  s.compute = tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  const cudaDataType_t scale_type = CUDA_R_32F;

  LADDER_CUBLAS_CHECK(cublasLtMatmulDescCreate(&s.desc.d, s.compute, scale_type));
  const cublasOperation_t opa = g.transa ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opb = g.transb ? CUBLAS_OP_T : CUBLAS_OP_N;
  LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa)));
  LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb)));
  LADDER_CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE, &g.epilogue, sizeof(g.epilogue)));
  if (g.bias) {
    LADDER_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias, sizeof(g.bias)));
    // The bias (or bias gradient) in A and B's dtype; into an fp32 D, in
    // fp32 (cuBLASLt's default: D's type).
    const cudaDataType_t bias_type = g.d_fp32 ? s.cd_type : s.ab_type;
    LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                       sizeof(bias_type)));
  }
  if (g.aux) {
    LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &g.aux,
                                                       sizeof(g.aux)));
    LADDER_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(s.desc.d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &g.ldaux,
                                                       sizeof(g.ldaux)));
  }

  LADDER_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&s.a.l, s.ab_type, g.transa ? g.k : g.m, g.transa ? g.m : g.k, g.lda));
  LADDER_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&s.b.l, s.ab_type, g.transb ? g.n : g.k, g.transb ? g.k : g.n, g.ldb));
  LADDER_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&s.cd.l, s.cd_type, g.m, g.n, g.ldd));

  std::tie(s.workspace_ptr, s.workspace_bytes) = workspace();
  s.align_a = alignment_bytes(g.a);
  s.align_b = alignment_bytes(g.b);
  s.align_d = alignment_bytes(g.d);
  if (g.bias) s.align_bias = alignment_bytes(g.bias);
  if (g.aux) s.align_aux = alignment_bytes(g.aux);  // the heuristic reads this pointer too
  s.reduction_mask = reduction_mask(dtype);
}

AlgoKey algo_key(const Gemm& g, const GemmSetup& s) {
  return {int(g.epilogue), int(g.transa), int(g.transb), g.m, g.n, g.k, int(s.ab_type), int(s.cd_type), g.beta,
          int(s.compute), s.align_a, s.align_b, s.align_d, s.align_bias, s.align_aux, s.reduction_mask,
          int64_t(s.workspace_bytes)};
}

// Asks cuBLASLt's heuristic for up to kMaxLtAlgos algorithms for s.
AlgoEntry query_heuristic(const GemmSetup& s) {
  Preference pref;
  LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.p));
  const auto prefer = [&pref](cublasLtMatmulPreferenceAttributes_t attribute, const auto& value) {
    LADDER_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.p, attribute, &value, sizeof(value)));
  };
  prefer(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, s.workspace_bytes);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, s.align_a);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, s.align_b);
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, s.align_d);  // C is D
  prefer(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, s.align_d);
  prefer(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, s.reduction_mask);
  AlgoEntry entry;
  int returned = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(at::cuda::getCurrentCUDABlasLtHandle(), s.desc.d, s.a.l, s.b.l, s.cd.l,
                                     s.cd.l, pref.p, kMaxLtAlgos, entry.results.data(), &returned);
  // NOT_SUPPORTED (or no result) means this epilogue has no kernel here, and
  // some epilogue/type/compute combinations are refused as INVALID_VALUE
  // instead: either way the caller falls back (counted, with the status).
  // Anything else is an error.
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED && st != CUBLAS_STATUS_INVALID_VALUE)
    LADDER_CUBLAS_CHECK(st);
  entry.status = st;
  entry.offered = st == CUBLAS_STATUS_SUCCESS ? std::min(returned, kMaxLtAlgos) : 0;
  return entry;
}

// The heuristic's algorithms for g, asked once per key and kept.
const AlgoEntry& heuristic(const Gemm& g, const GemmSetup& s) {
  const AlgoKey key = algo_key(g, s);
  {
    std::lock_guard<std::mutex> lock(g_algo_mutex);
    auto it = g_algos.find(key);
    if (it != g_algos.end()) return it->second;
  }
  const AlgoEntry entry = query_heuristic(s);
  std::lock_guard<std::mutex> lock(g_algo_mutex);
  return g_algos.emplace(key, entry).first->second;  // another thread's answer, if it came first
}

// One CUBLASLT_ALGO_CONFIG_* attribute of `algo`, of the type cublasLt.h gives it.
template <typename T>
T algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attribute) {
  T value{};
  size_t written = 0;
  LADDER_CUBLAS_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, attribute, &value, sizeof(value), &written));
  return value;
}

// What a plan records of the heuristic's result at `rank` (the one that runs).
void describe_algo(const AlgoEntry& e, int rank, size_t workspace_given, LtAlgoInfo& info) {
  const cublasLtMatmulHeuristicResult_t& r = e.results[size_t(rank)];
  info = LtAlgoInfo{};
  info.rank = rank;
  info.offered = e.offered;
  info.algo_id = algo_config<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_ID);
  info.tile = int(algo_config<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID));
  info.tile_name = tile_name(info.tile);
  info.stages = int(algo_config<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID));
  info.splitk = algo_config<int32_t>(r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  info.reduction_scheme = int(algo_config<uint32_t>(r.algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME));
  info.waves = r.wavesCount;
  info.workspace_bytes = r.workspaceSize;
  info.workspace_given = workspace_given;
}

// Why the algorithm at `rank` does not run: the heuristic offers none, fewer
// than rank + 1, or that one with a failed state.
std::string why_no_algo(const Gemm& g, at::ScalarType dtype, const GemmSetup& s, const AlgoEntry& e, int rank) {
  const Precision precision = dtype == at::kBFloat16 ? Precision::kBF16 : Precision::kFP32;
  if (e.offered == 0)
    return fmt::format(
        "cuBLASLt has no algorithm for epilogue {} at m={} n={} k={} ({}{}, alignment {}/{}/{} B, reduction schemes "
        "0x{:x}; heuristic: {})",
        epilogue_name(g.epilogue), g.m, g.n, g.k, precision_name(precision),
        g.d_fp32 ? fmt::format(" -> fp32, beta {}", g.beta) : "", s.align_a, s.align_b, s.align_d, s.reduction_mask,
        cublasLtGetStatusString(e.status));
  if (rank >= e.offered)
    return fmt::format("the heuristic offers {} algorithm{} for epilogue {} at m={} n={} k={}; rank {} asked",
                       e.offered, e.offered == 1 ? "" : "s", epilogue_name(g.epilogue), g.m, g.n, g.k, rank);
  return fmt::format("the heuristic's algorithm at rank {} for epilogue {} at m={} n={} k={} has state {}", rank,
                     epilogue_name(g.epilogue), g.m, g.n, g.k, cublasLtGetStatusString(e.results[size_t(rank)].state));
}

// What a plan records when nothing ran: the rank asked, how many the
// heuristic offers and the workspace; algo_id stays -1.
void describe_none(int rank, int offered, size_t workspace_given, LtAlgoInfo* used) {
  if (!used) return;
  *used = LtAlgoInfo{};
  used->rank = rank;
  used->offered = offered;
  used->workspace_given = workspace_given;
}

// Runs g with the heuristic's algorithm at `algo_rank` (0: its first) on the
// current stream, or returns false with the reason in *why_not.
bool run_gemm(const Gemm& g, at::ScalarType dtype, std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  TORCH_CHECK(algo_rank >= 0, "cublaslt_matmul: algo_rank must be >= 0, got ", algo_rank);
  if (dtype != at::kFloat && dtype != at::kBFloat16) {  // e.g. fp16 autocast: ATen's path computes it
    if (why_not)
      *why_not = fmt::format("cublaslt_matmul handles float32 and bfloat16 inputs, not {}", c10::toString(dtype));
    describe_none(algo_rank, 0, 0, used);
    return false;
  }
  GemmSetup s;
  describe(g, dtype, s);
  const AlgoEntry& entry = heuristic(g, s);
  const bool runs = algo_rank < entry.offered && entry.results[size_t(algo_rank)].state == CUBLAS_STATUS_SUCCESS;
  if (!runs) {
    if (why_not) *why_not = why_no_algo(g, dtype, s, entry, algo_rank);
    describe_none(algo_rank, entry.offered, s.workspace_bytes, used);
    return false;
  }
  if (used) describe_algo(entry, algo_rank, s.workspace_bytes, *used);
  const float alpha = 1.0f;
  LADDER_CUBLAS_CHECK(cublasLtMatmul(at::cuda::getCurrentCUDABlasLtHandle(), s.desc.d, &alpha, g.a, s.a.l, g.b,
                                     s.b.l, &g.beta, g.d, s.cd.l, g.d, s.cd.l, &entry.results[size_t(algo_rank)].algo,
                                     s.workspace_ptr, s.workspace_bytes, at::cuda::getCurrentCUDAStream().stream()));
  return true;
}

void check_matrix(const at::Tensor& t, const char* name, at::ScalarType dtype) {
  TORCH_CHECK(t.is_cuda() && t.is_contiguous() && t.scalar_type() == dtype, "cublaslt_matmul: ", name,
              " must be a contiguous CUDA ", dtype, " tensor, got ", t.scalar_type(), " on ", t.device(),
              t.is_contiguous() ? "" : " (not contiguous)");
}

// The sizes run_gemm's pointers and leading dimensions take for granted: a
// caller that passed others would have cuBLASLt read or write out of bounds.
void check_sizes(const char* op, const at::Tensor& t, const char* name, at::IntArrayRef want) {
  TORCH_CHECK(t.sizes() == want, "cublaslt_matmul: ", op, "'s ", name, " must be ", want, ", got ", t.sizes());
}

// The two 2-D operands (dy or x, and x or the weight) whose sizes every
// call below is planned from, before their sizes are read.
void check_2d(const char* op, const at::Tensor& a, const char* a_name, const at::Tensor& b, const char* b_name) {
  TORCH_CHECK(a.dim() == 2 && b.dim() == 2, "cublaslt_matmul: ", op, " wants 2-D ", a_name, " and ", b_name,
              ", got ", a_name, " ", a.sizes(), " and ", b_name, " ", b.sizes());
}

}  // namespace

bool lt_linear_forward(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, at::Tensor& y,
                       at::Tensor* pre, std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  const auto dtype = x.scalar_type();
  for (auto [t, name] : {std::pair{&x, "x"}, {&weight, "weight"}, {&bias, "bias"}, {&y, "y"}})
    check_matrix(*t, name, dtype);
  const bool gelu = pre != nullptr && pre->defined();
  if (gelu) check_matrix(*pre, "pre", dtype);
  check_2d("lt_linear_forward", x, "x", weight, "weight");
  const int64_t N = x.size(0), I = x.size(1), O = weight.size(0);
  check_sizes("lt_linear_forward", weight, "weight", {O, I});
  check_sizes("lt_linear_forward", bias, "bias", {O});
  check_sizes("lt_linear_forward", y, "y", {N, O});
  if (gelu) check_sizes("lt_linear_forward", *pre, "pre", {N, O});
  // Column-major Y^T (O, N) = W (O, I) . X^T (I, N): A = W stored (I, O), op T;
  // B = X stored (I, N), op N.
  Gemm g{gelu ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_BIAS, /*transa=*/true, /*transb=*/false,
         /*m=*/O, /*n=*/N, /*k=*/I, weight.data_ptr(), /*lda=*/I, x.data_ptr(), /*ldb=*/I, y.data_ptr(),
         /*ldd=*/O, bias.data_ptr()};
  if (gelu) {
    g.aux = pre->data_ptr();
    g.ldaux = O;
  }
  return run_gemm(g, dtype, why_not, algo_rank, used);
}

bool lt_weight_bias_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, at::Tensor& dbias,
                         std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&x, "x"}, {&dweight, "dweight"}, {&dbias, "dbias"}})
    check_matrix(*t, name, dtype);
  check_2d("lt_weight_bias_grad", dy, "dy", x, "x");
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  check_sizes("lt_weight_bias_grad", x, "x", {N, I});
  check_sizes("lt_weight_bias_grad", dweight, "dweight", {O, I});
  check_sizes("lt_weight_bias_grad", dbias, "dbias", {O});
  // Column-major dW^T (I, O) = X^T (I, N) . dY (N, O): A = X stored (I, N), op N;
  // B = dY stored (O, N), op T. BGRADB reduces B over k = N: db (O).
  Gemm g{CUBLASLT_EPILOGUE_BGRADB, /*transa=*/false, /*transb=*/true, /*m=*/I, /*n=*/O, /*k=*/N, x.data_ptr(),
         /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dweight.data_ptr(), /*ldd=*/I, dbias.data_ptr()};
  return run_gemm(g, dtype, why_not, algo_rank, used);
}

bool lt_weight_grad(const at::Tensor& dy, const at::Tensor& x, at::Tensor& dweight, std::string* why_not,
                    int algo_rank, LtAlgoInfo* used) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&x, "x"}, {&dweight, "dweight"}}) check_matrix(*t, name, dtype);
  check_2d("lt_weight_grad", dy, "dy", x, "x");
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  check_sizes("lt_weight_grad", x, "x", {N, I});
  check_sizes("lt_weight_grad", dweight, "dweight", {O, I});
  // As lt_weight_bias_grad, without BGRADB's reduction of B.
  Gemm g{CUBLASLT_EPILOGUE_DEFAULT, /*transa=*/false, /*transb=*/true, /*m=*/I, /*n=*/O, /*k=*/N, x.data_ptr(),
         /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dweight.data_ptr(), /*ldd=*/I};
  return run_gemm(g, dtype, why_not, algo_rank, used);
}

bool lt_input_grad_dgelu(const at::Tensor& dy, const at::Tensor& weight, const at::Tensor& pre, at::Tensor& dpre,
                         std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&weight, "weight"}, {&pre, "pre"}, {&dpre, "dpre"}})
    check_matrix(*t, name, dtype);
  check_2d("lt_input_grad_dgelu", dy, "dy", weight, "weight");
  const int64_t N = dy.size(0), O = dy.size(1), I = weight.size(1);
  check_sizes("lt_input_grad_dgelu", weight, "weight", {O, I});
  check_sizes("lt_input_grad_dgelu", pre, "pre", {N, I});
  check_sizes("lt_input_grad_dgelu", dpre, "dpre", {N, I});
  // Column-major dPre^T (I, N) = W^T (I, O) . dY^T (O, N): A = W stored (I, O),
  // op N; B = dY stored (O, N), op N. DGELU multiplies by gelu'(pre) (aux, ld I).
  Gemm g{CUBLASLT_EPILOGUE_DGELU, /*transa=*/false, /*transb=*/false, /*m=*/I, /*n=*/N, /*k=*/O,
         weight.data_ptr(), /*lda=*/I, dy.data_ptr(), /*ldb=*/O, dpre.data_ptr(), /*ldd=*/I, nullptr,
         pre.data_ptr(), /*ldaux=*/I};
  return run_gemm(g, dtype, why_not, algo_rank, used);
}

namespace {

// grad (O, I) += dy^T x into the fp32 grad (beta = 1), with BGRADB writing
// the fp32 bias gradient to `dbias` when it is not null: the two
// *_accumulate calls.
bool weight_grad_accumulate(const char* op, const at::Tensor& dy, const at::Tensor& x, at::Tensor& grad,
                            at::Tensor* dbias, std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  const auto dtype = dy.scalar_type();
  for (auto [t, name] : {std::pair{&dy, "dy"}, {&x, "x"}}) check_matrix(*t, name, dtype);
  check_matrix(grad, "grad", at::kFloat);
  check_2d(op, dy, "dy", x, "x");
  const int64_t N = dy.size(0), O = dy.size(1), I = x.size(1);
  check_sizes(op, x, "x", {N, I});
  check_sizes(op, grad, "grad", {O, I});
  TORCH_CHECK(x.device() == dy.device() && grad.device() == dy.device(), "cublaslt_matmul: ", op,
              "'s tensors must be on one device, got dy on ", dy.device(), ", x on ", x.device(), ", grad on ",
              grad.device());
  if (dbias) {
    check_matrix(*dbias, "dbias", at::kFloat);
    check_sizes(op, *dbias, "dbias", {O});
    TORCH_CHECK(dbias->device() == dy.device(), "cublaslt_matmul: ", op, "'s dbias must be on ", dy.device(),
                ", got ", dbias->device());
  }
  // As lt_weight_grad (or lt_weight_bias_grad), with D (and C) the fp32 grad
  // and beta 1: column-major grad^T (I, O) += X^T (I, N) . dY (N, O): A = X
  // stored (I, N), op N; B = dY stored (O, N), op T; D ld I. BGRADB reduces
  // B over k = N.
  Gemm g{dbias ? CUBLASLT_EPILOGUE_BGRADB : CUBLASLT_EPILOGUE_DEFAULT, /*transa=*/false, /*transb=*/true, /*m=*/I,
         /*n=*/O, /*k=*/N, x.data_ptr(), /*lda=*/I, dy.data_ptr(), /*ldb=*/O, grad.data_ptr(), /*ldd=*/I,
         dbias ? dbias->data_ptr() : nullptr};
  g.beta = 1.0f;
  g.d_fp32 = true;
  return run_gemm(g, dtype, why_not, algo_rank, used);
}

}  // namespace

bool lt_weight_grad_accumulate(const at::Tensor& dy, const at::Tensor& x, at::Tensor& grad, std::string* why_not,
                               int algo_rank, LtAlgoInfo* used) {
  return weight_grad_accumulate("lt_weight_grad_accumulate", dy, x, grad, nullptr, why_not, algo_rank, used);
}

bool lt_weight_bias_grad_accumulate(const at::Tensor& dy, const at::Tensor& x, at::Tensor& grad, at::Tensor& dbias,
                                    std::string* why_not, int algo_rank, LtAlgoInfo* used) {
  return weight_grad_accumulate("lt_weight_bias_grad_accumulate", dy, x, grad, &dbias, why_not, algo_rank, used);
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

std::string lt_version() { return std::to_string(cublasLtGetVersion()); }

size_t lt_workspace_bytes() {
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  return g_workspace.defined() ? size_t(g_workspace.numel()) : 0;
}

}  // namespace ladder::fused::cuda
