// tests/support/shard_files.h: writes token shards byte by byte, independently of
// the reader under test, in llm.c's layout (256 x int32 header: magic,
// version, token count; then uint16 tokens) or nanoGPT's raw uint16 layout.
// Header fields can be set wrong on purpose for the bad-input tests.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ladder::test {

struct LlmcHeader {
  int32_t magic = 20240520;
  int32_t version = 1;
  int64_t count = -1;  // -1: the number of tokens written
};

inline void put_u16(std::ofstream& f, uint16_t v) {
  const char b[2] = {char(v & 0xff), char(v >> 8)};
  f.write(b, 2);
}

inline void put_i32(std::ofstream& f, int32_t v) {
  for (int i = 0; i < 4; ++i) f.put(char((uint32_t(v) >> (8 * i)) & 0xff));
}

inline void write_llmc(const std::filesystem::path& path, const std::vector<uint16_t>& tokens,
                       LlmcHeader h = {}) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  put_i32(f, h.magic);
  put_i32(f, h.version);
  put_i32(f, int32_t(h.count < 0 ? int64_t(tokens.size()) : h.count));
  for (int i = 3; i < 256; ++i) put_i32(f, 0);
  for (uint16_t t : tokens) put_u16(f, t);
}

inline void write_raw(const std::filesystem::path& path, const std::vector<uint16_t>& tokens) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  for (uint16_t t : tokens) put_u16(f, t);
}

// tokens[i] = (i * 7 + salt) % vocab: every window is recognisable.
inline std::vector<uint16_t> pattern_tokens(int64_t n, int64_t vocab, int64_t salt = 0) {
  std::vector<uint16_t> t(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) t[size_t(i)] = uint16_t((i * 7 + salt) % vocab);
  return t;
}

}  // namespace ladder::test
