// variants/ddp/nccl_backend_none.cpp: make_nccl_backend in a build without
// NCCL (see cuda/nccl_backend.h): the ddp rung on CUDA needs NCCL.
#include <fmt/format.h>

#include "variants/config/config.h"
#include "variants/ddp/cuda/nccl_backend.h"

namespace ladder {

c10::intrusive_ptr<c10d::Backend> make_nccl_backend(const c10::intrusive_ptr<c10d::Store>&, int,
                                                    int, std::chrono::milliseconds, int) {
  throw ConfigError(
      "--device cuda with the ddp rung: this ladder was built without NCCL (see `ladder version`); "
      "rebuild on a machine with NCCL, or run the ddp rung on --device cpu (Gloo)");
}

std::unique_ptr<DeviceCommTimer> make_device_comm_timer() { return nullptr; }

}  // namespace ladder
