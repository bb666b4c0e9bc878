// tests/support/cache_dir.h: LADDER_CACHE pointed at a temporary directory for a
// test's lifetime (the planners' caches, variants/planners/plan_common.h), then put back.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <unistd.h>

namespace ladder {

struct CacheDir {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ladder-plan-cache-" + std::to_string(::getpid()));
  std::string old;
  bool had = false;
  CacheDir() {
    if (const char* o = std::getenv("LADDER_CACHE")) had = true, old = o;
    ::setenv("LADDER_CACHE", dir.c_str(), 1);
  }
  ~CacheDir() {
    had ? (void)::setenv("LADDER_CACHE", old.c_str(), 1) : (void)::unsetenv("LADDER_CACHE");
    std::filesystem::remove_all(dir);
  }
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;
};

}  // namespace ladder
