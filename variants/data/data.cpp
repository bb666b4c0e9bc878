// variants/data/data.cpp: the seeded synthetic token stream (see data.h).
#include "variants/data/data.h"

#include <nlohmann/json.hpp>

namespace ladder {

uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

namespace {

class SyntheticTokens final : public TokenSource {
 public:
  explicit SyntheticTokens(const SyntheticSpec& spec) : s_(spec) {}

  Batch batch(int64_t step, int64_t micro) override {
    const int64_t B = s_.batch, T = s_.seq;
    BatchToFill f = batch_to_fill(s_, step, micro);
    int64_t* px = f.x;
    int64_t* py = f.y;
    const uint64_t base = s_.seed * 0xD1B54A32D192ED03ULL;
    for (int64_t b = 0; b < B; ++b) {
      const uint64_t row = uint64_t(f.first_row + b);
      for (int64_t j = 0; j <= T; ++j) {
        const auto token = int64_t(splitmix64(base + row * uint64_t(T + 1) + uint64_t(j)) %
                                   uint64_t(s_.vocab));
        if (j < T) px[b * T + j] = token;
        if (j > 0) py[b * T + j - 1] = token;
      }
    }
    return f.batch;
  }

  DataSection describe() const override {
    DataSection d;
    d.kind = "synthetic";
    d.generator = "splitmix64 counter hash, uniform over [0, vocab_size)";
    describe_stream(s_, d);
    return d;
  }

 private:
  SyntheticSpec s_;
};

}  // namespace

std::unique_ptr<TokenSource> make_synthetic_source(const SyntheticSpec& spec) {
  return std::make_unique<SyntheticTokens>(spec);
}

}  // namespace ladder
