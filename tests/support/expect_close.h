// tests/support/expect_close.h: the comparisons the fused-op tests share: tensors
// element-wise within a tolerance (reporting the largest difference), and an
// error whose message names what went wrong.
#pragma once

#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace ladder::testing {

// Every element within atol + rtol * |expected|, same shape and dtype; on any
// device (compared in double on the CPU).
inline void expect_close(const torch::Tensor& actual, const torch::Tensor& expected, double rtol, double atol,
                         const std::string& what) {
  ASSERT_TRUE(actual.defined()) << what << " is undefined";
  ASSERT_TRUE(expected.defined()) << what << " (reference) is undefined";
  ASSERT_EQ(actual.sizes(), expected.sizes()) << what;
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type()) << what;
  const auto a = actual.cpu().to(torch::kDouble), e = expected.cpu().to(torch::kDouble);
  const double max_diff = (a - e).abs().max().item<double>();
  EXPECT_TRUE(torch::allclose(a, e, rtol, atol))
      << what << ": max |fused - reference| = " << max_diff << " (rtol " << rtol << ", atol " << atol << ")";
}

// Runs fn, expects a c10::Error whose message contains `needle`.
inline void expect_error_mentions(const std::function<void()>& fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected a c10::Error mentioning \"" << needle << "\"";
  } catch (const c10::Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// Puts a process-wide setting back as it was when the test ends, whatever
// the test throws: const SettingRestorer restore{kernel(), set_kernel};
template <class T>
class SettingRestorer {
 public:
  SettingRestorer(T before, void (*set)(T)) : before_(before), set_(set) {}
  SettingRestorer(const SettingRestorer&) = delete;
  SettingRestorer& operator=(const SettingRestorer&) = delete;
  ~SettingRestorer() { set_(before_); }

 private:
  T before_;
  void (*set_)(T);
};

}  // namespace ladder::testing
