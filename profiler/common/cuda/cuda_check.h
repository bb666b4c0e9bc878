// profiler/common/cuda/cuda_check.h: CUDA_CHECK reports the failing call with file:line.
#pragma once

#include <stdexcept>

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#define LADDER_CUDA_CHECK(expr)                                                            \
  do {                                                                                     \
    cudaError_t ladder_err_ = (expr);                                                      \
    if (ladder_err_ != cudaSuccess)                                                        \
      throw std::runtime_error(fmt::format("{}:{}: {} failed: {} ({})", __FILE__, __LINE__, \
                                           #expr, cudaGetErrorString(ladder_err_),         \
                                           int(ladder_err_)));                             \
  } while (0)
