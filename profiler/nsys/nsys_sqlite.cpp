// profiler/nsys/nsys_sqlite.cpp: see nsys_sqlite.h.
#include "profiler/nsys/nsys_sqlite.h"

#include <filesystem>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "profiler/common/config_error.h"

#ifdef LADDER_HAVE_SQLITE3
#include <sqlite3.h>
#endif

namespace ladder::profiler {

#ifdef LADDER_HAVE_SQLITE3

namespace {

constexpr int64_t kIdMask = 0xFFFFFF;

int64_t nsys_pid(int64_t global) { return (global >> 24) & kIdMask; }
int64_t nsys_tid(int64_t global) { return global & kIdMask; }

class Database {
 public:
  explicit Database(const std::string& path) : path_(path) {
    sqlite3* db = nullptr;
    const int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    db_.reset(db);
    if (rc != SQLITE_OK)
      throw ConfigError(fmt::format("{}: cannot open as SQLite ({}); expected `nsys export --type sqlite` output",
                                    path, db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)));
  }

  bool has_table(const std::string& name) {
    bool found = false;
    each("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '" + name + "'",
         [&](sqlite3_stmt*) { found = true; });
    return found;
  }

  bool has_column(const std::string& table, const std::string& column) {
    bool found = false;
    each("PRAGMA table_info(" + table + ")", [&](sqlite3_stmt* s) {
      const auto* n = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
      if (n && column == n) found = true;
    });
    return found;
  }

  // Runs `sql`, calling `row` for every row.
  template <class F>
  void each(const std::string& sql, F&& row) {
    sqlite3_stmt* raw = nullptr;
    if (sqlite3_prepare_v2(db_.get(), sql.c_str(), -1, &raw, nullptr) != SQLITE_OK)
      throw ConfigError(fmt::format("{}: {} (in: {}); expected the tables of an `nsys export --type sqlite` file",
                                    path_, sqlite3_errmsg(db_.get()), sql));
    std::unique_ptr<sqlite3_stmt, int (*)(sqlite3_stmt*)> stmt(raw, sqlite3_finalize);
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) row(stmt.get());
    if (rc != SQLITE_DONE)
      throw ConfigError(fmt::format("{}: {} (in: {}); is it an SQLite file?", path_, sqlite3_errmsg(db_.get()), sql));
  }

 private:
  std::string path_;
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> db_{nullptr, sqlite3_close};
};

std::string column_text(sqlite3_stmt* s, int col) {
  const auto* t = reinterpret_cast<const char*>(sqlite3_column_text(s, col));
  return t ? t : "";
}

}  // namespace

std::vector<Capture> read_nsys_sqlite(const std::string& path) {
  if (!std::filesystem::is_regular_file(path))
    throw ConfigError(fmt::format("{}: no such file; expected `nsys export --type sqlite` output", path));
  Database db(path);
  for (const char* t : {"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"})
    if (!db.has_table(t))
      throw ConfigError(fmt::format("{}: no table {}; expected an `nsys export --type sqlite` of a capture with "
                                    "CUDA and NVTX traced (scripts/nsys: nsys profile --trace=cuda,nvtx)",
                                    path, t));
  std::map<int64_t, Capture> by_pid;
  auto capture = [&](int64_t pid) -> Capture& {
    Capture& c = by_pid[pid];
    c.pid = pid;
    return c;
  };
  // NVTX push/pop (59) and start/end (60) ranges; an unended one has no end.
  db.each("SELECT n.start, n.end, COALESCE(n.text, s.value, ''), n.globalTid FROM NVTX_EVENTS AS n "
          "LEFT JOIN StringIds AS s ON s.id = n.textId "
          "WHERE n.eventType IN (59, 60) AND n.end IS NOT NULL AND n.end >= n.start",
          [&](sqlite3_stmt* s) {
            const int64_t g = sqlite3_column_int64(s, 3);
            capture(nsys_pid(g)).ranges.push_back(
                {column_text(s, 2), sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), nsys_tid(g)});
          });
  // Each activity with its launching call: correlation ids are unique within a process.
  // A kernel's name is its demangledName's string; a memcpy's or memset's, `fixed_name`.
  auto activities = [&](const std::string& table, const char* fixed_name, DeviceEvent::Kind kind) {
    if (!db.has_table(table)) return;
    const std::string name = fixed_name ? fmt::format("'{}'", fixed_name) : "COALESCE(s.value, '')";
    const std::string join = fixed_name ? "" : "LEFT JOIN StringIds AS s ON s.id = a.demangledName ";
    db.each("SELECT a.start, a.end, " + name + ", a.globalPid, r.start, COALESCE(r.globalTid, 0) FROM " + table +
                " AS a " + join +
                "LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r ON r.correlationId = a.correlationId "
                "AND ((r.globalTid >> 24) & 16777215) = ((a.globalPid >> 24) & 16777215)",
            [&](sqlite3_stmt* s) {
              const int64_t g = sqlite3_column_int64(s, 5);
              CaptureActivity a;
              a.name = column_text(s, 2);
              a.kind = kind;
              a.start_ns = sqlite3_column_int64(s, 0);
              a.end_ns = sqlite3_column_int64(s, 1);
              a.launch_ns = sqlite3_column_int64(s, 4);
              a.launch_tid = g != 0 ? nsys_tid(g) : 0;
              capture(nsys_pid(sqlite3_column_int64(s, 3))).activities.push_back(std::move(a));
            });
  };
  if (!db.has_column("CUPTI_ACTIVITY_KIND_KERNEL", "demangledName"))
    throw ConfigError(fmt::format("{}: table CUPTI_ACTIVITY_KIND_KERNEL has no column demangledName; expected the "
                                  "documented schema of `nsys export --type sqlite`",
                                  path));
  activities("CUPTI_ACTIVITY_KIND_KERNEL", nullptr, DeviceEvent::Kind::kKernel);
  activities("CUPTI_ACTIVITY_KIND_MEMCPY", "[CUDA memcpy]", DeviceEvent::Kind::kMemcpy);
  activities("CUPTI_ACTIVITY_KIND_MEMSET", "[CUDA memset]", DeviceEvent::Kind::kMemset);
  std::vector<Capture> out;
  for (auto& [pid, c] : by_pid)
    if (!c.activities.empty()) out.push_back(std::move(c));
  if (out.empty())
    throw ConfigError(fmt::format("{}: no kernel, memcpy or memset recorded; expected a capture with CUDA traced "
                                  "(nsys profile --trace=cuda,nvtx)",
                                  path));
  return out;
}

#else

std::vector<Capture> read_nsys_sqlite(const std::string& path) {
  throw ConfigError(fmt::format("{}: this ladder was built without SQLite3, which reading an nsys export needs; "
                                "install libsqlite3-dev (scripts/bootstrap does) and build again",
                                path));
}

#endif

}  // namespace ladder::profiler
