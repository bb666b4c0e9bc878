// reports/model/comparison/kernel_family.h: the family a kernel or operator name belongs
// to, so that `ladder compare --kernels` matches kernels across GPUs, builds
// and libraries that name the same work differently.
//
// Two GPUs run the same GEMM as kernels whose names differ only in what the
// library tuned for the chip: nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT
// on one, ..._192x128_64x5_1x2_h_bz_coopA_NNT on another. The family keeps
// what says which work it is and drops what says how it was tiled:
//  - C++ names (demangled CUDA kernels, ladder's and ATen's): template
//    arguments, the parameter list, "void ", "(anonymous namespace)::" and
//    lambdas go; at::native::vectorized_elementwise_kernel<4, ...> is
//    at::native::vectorized_elementwise_kernel; a wrapper whose kernel is
//    its first template argument (cutlass::Kernel2<cutlass_80_...>, an
//    autograd node torch::autograd::CppNode<ladder::...::MlpGeluFunction>)
//    keeps that argument's family;
//  - generated names (cuBLAS, cuBLASLt's nvjet, cuDNN, CUTLASS), split at
//    '_': architecture tokens (sm90, sm_80a, hopper), tile, cluster and
//    warp-group shapes (256x128, 64x4, cga1x1x1, tilesize128x128x64),
//    numbers, tuning knobs (knob_26) and cuBLASLt's scheduling tokens
//    (h, v, bz, coopA, coopB) go; the layout (NNT), the epilogue
//    (geluauxbias) and the data types stay;
//  - an operator (aten::addmm), a range, or a name cut short in an older
//    report ("...") is its own family, less the cut.
// The band (op_categories.h) is kept beside the family by the caller: one
// family name may hold kernels of two bands (a copy and an add are both
// vectorized_elementwise_kernel), and each is matched within its band.
#pragma once

#include <string>

namespace ladder {

std::string kernel_family(const std::string& name);

}  // namespace ladder
