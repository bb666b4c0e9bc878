// bench/measure/roofline/bandwidth.h: the device's memory-bandwidth ceiling, the
// roofline's second ceiling beside its matmul TFLOP/s (roofline.h).
//
// Two of STREAM's kernels (McCalpin) and an in-place one, on fp32 tensors,
// with the run's threads on a CPU:
//   copy    dst.copy_(src)                   bytes = 2 x array (read src, write dst)
//   triad   a = b + s * c (at::add_out)      bytes = 3 x array (read b and c, write a)
//   update  at::_fused_adamw_ on p, g, m, v  bytes = 7 x array (read all four, write p, m, v)
// counted STREAM's way: the bytes the kernel must move. copy and triad write
// arrays they did not read, so a CPU also reads each line before it writes
// it (write-allocate) and their figures are below what its memory moves;
// update writes only what it read, and with seven streams it keeps more
// requests in flight: on a 2-vCPU Xeon it reached 43.5 GB/s at 1 GiB where
// copy and triad reached 25 and 28 (2026-11-29), and the step's own fused
// AdamW 40, above a copy-or-triad floor. The ceiling is the best of the
// three (best_gbps). Each is timed by the harness's step timer
// (bench/measure/device/device.h: CUDA events on a GPU), the best of several
// repetitions, at a ladder of working sets (every array of the kernel
// together: copy's two halves, triad's three thirds, so one repetition moves
// the working set's bytes) from cache-resident to well past the last-level
// cache. A small tensor runs from cache, faster than DRAM: a floor for it
// takes the bandwidth of its working set (bandwidth_for_working_set); the
// largest working set's is the DRAM (HBM) figure, the headline.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "bench/measure/roofline/mfu.h"
#include "reports/model/report/roofline_section.h"  // MemoryBandwidth

namespace ladder {

// The working sets probed on `device` for a last-level cache of `llc_bytes`
// (0: unknown), smallest first: CPU 256 KiB, GPU 1 MiB, then x4 up to the
// largest, which is 8x the LLC on a CPU (at least 256 MiB, at most 1 GiB) and
// 4x the L2 on a GPU (at least 1 GiB, at most 4 GiB), and never more than a
// quarter of the device's memory (`memory_bytes`).
std::vector<int64_t> bandwidth_working_sets(const torch::Device& device, int64_t llc_bytes, int64_t memory_bytes);

// Measures copy, triad and update at every working set, with the intra-op threads
// set now (at::get_num_threads()).
MemoryBandwidth probe_memory_bandwidth(const torch::Device& device);

// The measured size that applies to a working set of `working_set_bytes`:
// the largest measured working set not above it, else the smallest measured
// (a smaller working set runs at least as fast). A floor (bytes / bandwidth)
// then never takes a bandwidth below the one that applies. `m` has a size
// (probe_memory_bandwidth and roofline_file_from make sure of it).
const BandwidthAtSize& bandwidth_for_working_set(const MemoryBandwidth& m, int64_t working_set_bytes);

}  // namespace ladder
