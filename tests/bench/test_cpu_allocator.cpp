// tests/bench/test_cpu_allocator.cpp: the CPU allocator that counts live tensor
// storage (bench/measure/device/cpu_allocator.h): what a tensor adds while it lives, the
// peak, the reset, and that tensors from it still behave (a plain pointer, a
// resize, a free from another thread). Installed alone, without
// keep_cpu_memory_in_process's malloc settings: the other tests of this
// binary must not inherit them (the memory monitor's expects freed memory to
// go back to the OS).
#include <gtest/gtest.h>

#include <thread>

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include "bench/measure/device/cpu_allocator.h"

namespace ladder {
namespace {

TEST(CpuAllocator, CountsLiveTensorBytesAndTheirPeak) {
  ASSERT_TRUE(count_cpu_tensors());
  ASSERT_TRUE(cpu_allocated().counting);
  const int64_t base = cpu_allocated().current_bytes;
  reset_cpu_allocated_peak();
  {
    auto a = torch::empty({1000}, torch::kFloat32);  // 4,000 bytes
    EXPECT_EQ(cpu_allocated().current_bytes - base, 4000);
    {
      auto b = torch::empty({250, 4}, torch::kFloat64);  // 8,000 bytes
      EXPECT_EQ(cpu_allocated().current_bytes - base, 12000);
    }
    EXPECT_EQ(cpu_allocated().current_bytes - base, 4000);
    EXPECT_EQ(cpu_allocated().peak_bytes - base, 12000);
  }
  EXPECT_EQ(cpu_allocated().current_bytes, base);
  reset_cpu_allocated_peak();
  EXPECT_EQ(cpu_allocated().peak_bytes, base);
}

TEST(CpuAllocator, ItsTensorsStayPlainAndFreeFromAnyThread) {
  ASSERT_TRUE(count_cpu_tensors());
  const int64_t base = cpu_allocated().current_bytes;
  auto t = torch::arange(64, torch::kFloat32);
  const auto& ptr = t.storage().data_ptr();
  EXPECT_EQ(ptr.get(), ptr.get_context());  // raw_allocate and raw_deleter need this
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr.get()) % 64, 0u);
  t.resize_({1024});  // a new block through the allocator, the old one freed
  EXPECT_EQ(cpu_allocated().current_bytes - base, 4096);
  EXPECT_FLOAT_EQ(t[63].item<float>(), 63.0f);
  std::thread([moved = std::move(t)]() mutable { moved = torch::Tensor(); }).join();
  EXPECT_EQ(cpu_allocated().current_bytes, base);
  void* raw = c10::GetCPUAllocator()->raw_allocate(100);
  EXPECT_EQ(cpu_allocated().current_bytes - base, 100);
  c10::GetCPUAllocator()->raw_deallocate(raw);
  EXPECT_EQ(cpu_allocated().current_bytes, base);
}

}  // namespace
}  // namespace ladder
