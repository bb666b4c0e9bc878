// reports/model/report/memory_section.h: the parts of a report's memory
// section that its builders make below the report (the analytic estimate,
// bench/measure/report/memory.h; the CPU allocator's settings,
// bench/measure/device/cpu_allocator.h), as structs whose fields are their
// JSON, its strict reading and their schema (profiler/common/fields.h).
#pragma once

#include <cstdint>
#include <string>

#include "profiler/common/fields.h"

namespace ladder {

// An analytic estimate of training memory per device, beside the measured
// peak (bench/measure/report/memory.h estimate_memory).
struct MemoryEstimate {
  int64_t parameter_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t optimizer_state_bytes = 0;  // AdamW: exp_avg and exp_avg_sq
  int64_t activation_bytes = 0;       // saved for backward, at the peak
  int64_t total_bytes = 0;
  // Always written; absent in reports from before zero1 and act-ckpt (2026-11-27).
  fields::Maybe<int64_t> optimizer_shards;
  fields::Maybe<bool> checkpoint_blocks;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("parameter_bytes", s.parameter_bytes, fields::Doc().min(0));
    v("gradient_bytes", s.gradient_bytes, fields::Doc().min(0));
    v("optimizer_state_bytes", s.optimizer_state_bytes, fields::Doc().min(0));
    v("activation_bytes", s.activation_bytes, fields::Doc().min(0));
    v("total_bytes", s.total_bytes, fields::Doc().min(0));
    v("optimizer_shards", s.optimizer_shards,
      fields::Doc("ranks the AdamW state is divided over (zero1 on the ddp rung); 1 otherwise. Absent in older "
                  "reports")
          .min(1));
    v("checkpoint_blocks", s.checkpoint_blocks,
      "act-ckpt: activations of every block's input and of one block, not of L blocks. Absent in older reports");
  }
};

// CPU: the glibc malloc settings that keep freed tensors in the process, and
// whether LibTorch's CPU allocator is wrapped to count tensor bytes.
struct CpuAllocatorSection {
  std::string allocator, settings;
  bool applied = false;
  // Always written; absent in reports from before the counting allocator.
  fields::Maybe<bool> counting;
  fields::Maybe<std::string> counting_note;
  std::string why;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("allocator", s.allocator);
    v("settings", s.settings);
    v("applied", s.applied, "whether every mallopt setting took");
    v("counting", s.counting, "whether LibTorch's CPU allocator is wrapped to count live tensor bytes");
    v("counting_note", s.counting_note);
    v("why", s.why);
  }
};

}  // namespace ladder
