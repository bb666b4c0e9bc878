// profiler/common/atomic_file.h: write a file so that readers see either the old
// content or the complete new content, never half of it (temp + fsync +
// rename + directory fsync). A killed process leaves at most a *.tmp.* file.
#pragma once

#include <string>

namespace ladder {

// Throws std::runtime_error naming the path and the errno text on failure.
void write_file_atomically(const std::string& path, const std::string& content);

// The same for a file another library wrote (e.g. a Kineto trace): fsyncs
// `tmp_path`, renames it to `path` and fsyncs the directory. On failure the
// temporary file is removed and std::runtime_error names the path.
void commit_file_atomically(const std::string& tmp_path, const std::string& path);

// Creates `dir` (and parents) and checks a file can be created in it; throws
// ConfigError naming `option` and the reason otherwise.
void ensure_writable_dir(const std::string& dir, const char* option);

}  // namespace ladder
