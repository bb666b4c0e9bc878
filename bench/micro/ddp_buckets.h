// bench/micro/ddp_buckets.h: the gradient bucket sizes DDP would use for a
// parameter list, from c10d's own bucket assignment
// (compute_bucket_assignment_by_size) with DDP's default limits, 1 MiB for
// the first bucket and 25 MiB after it (c10d fills a bucket until it reaches
// its limit, so a bucket can pass it by its last tensor), over the
// parameters in the order their gradients become ready in the backward pass
// (the reverse of the forward order), as DDP rebuilds its buckets after the
// first iteration.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace ladder::micro {

// Bytes per bucket, in the order c10d assigns them.
std::vector<int64_t> ddp_bucket_bytes(const std::vector<torch::Tensor>& params);

// The sizes worth timing: the smallest, the median and the largest bucket
// (deduplicated, ascending).
std::vector<int64_t> representative_buckets(std::vector<int64_t> bucket_bytes);

}  // namespace ladder::micro
