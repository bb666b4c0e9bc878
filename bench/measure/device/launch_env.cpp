// bench/measure/device/launch_env.cpp: launcher variables -> LaunchEnv (see launch_env.h).
#include "bench/measure/device/launch_env.h"

#include <cstdlib>
#include <vector>

#include <fmt/format.h>

#include "variants/config/config.h"

namespace ladder {

EnvLookup process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    return v ? std::optional<std::string>(v) : std::nullopt;
  };
}

namespace {

// The four numbers one launcher provides, under its variable names.
struct Scheme {
  const char* launcher;
  const char* rank;
  const char* local_rank;
  const char* world_size;
  const char* local_world_size;  // may be absent or not a plain number (Slurm)
};

constexpr Scheme kTorchrun{"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"};
constexpr Scheme kOpenMpi{"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"};
constexpr Scheme kSlurm{"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS",
                        "SLURM_NTASKS_PER_NODE"};

int read_int(const EnvLookup& env, const char* name, int min_value, bool* present = nullptr) {
  const auto v = env(name);
  if (present) *present = v.has_value();
  if (!v) return -1;
  char* end = nullptr;
  errno = 0;
  const long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || x < min_value || x > 1 << 20)
    throw ConfigError(fmt::format("environment: {}='{}', expected an integer >= {}", name, *v, min_value));
  return int(x);
}

std::optional<LaunchEnv> read_scheme(const EnvLookup& env, const Scheme& s) {
  bool has_rank = false;
  const int rank = read_int(env, s.rank, 0, &has_rank);
  if (!has_rank) return std::nullopt;
  LaunchEnv e;
  e.launcher = s.launcher;
  e.rank = rank;
  bool has_world = false;
  e.world_size = read_int(env, s.world_size, 1, &has_world);
  if (!has_world)
    throw ConfigError(fmt::format("environment: {} is set ({}) but {} is not; a {} launch sets both",
                                  s.rank, rank, s.world_size, s.launcher));
  if (e.rank >= e.world_size)
    throw ConfigError(fmt::format("environment: {}={} is not below {}={}; expected 0 <= rank < world size",
                                  s.rank, e.rank, s.world_size, e.world_size));
  bool has_local = false;
  e.local_rank = read_int(env, s.local_rank, 0, &has_local);
  if (!has_local) e.local_rank = 0;
  // Slurm writes e.g. "2(x3)" for heterogeneous layouts: only a plain number counts.
  const auto lws = env(s.local_world_size);
  e.local_world_size = 1;
  if (lws && lws->find_first_not_of("0123456789") == std::string::npos && !lws->empty())
    e.local_world_size = read_int(env, s.local_world_size, 1);
  if (e.local_rank >= e.local_world_size) e.local_world_size = e.local_rank + 1;
  return e;
}

}  // namespace

LaunchEnv detect_launch_env(const EnvLookup& env) {
  std::vector<LaunchEnv> found;
  for (const Scheme* s : {&kTorchrun, &kOpenMpi, &kSlurm})
    if (auto e = read_scheme(env, *s)) found.push_back(*e);
  if (found.empty()) return LaunchEnv{};
  // torchrun's variables win (a user may export them inside an srun step),
  // but every launcher present must describe the same job.
  const LaunchEnv& e0 = found.front();
  const Scheme* schemes[] = {&kTorchrun, &kOpenMpi, &kSlurm};
  auto scheme_of = [&](const LaunchEnv& e) {
    for (const Scheme* s : schemes)
      if (e.launcher == s->launcher) return s;
    return schemes[0];
  };
  for (size_t i = 1; i < found.size(); ++i) {
    const LaunchEnv& e = found[i];
    const Scheme *a = scheme_of(e0), *b = scheme_of(e);
    if (e.world_size != e0.world_size)
      throw ConfigError(fmt::format("environment: {}={} disagrees with {}={}; both launchers must "
                                    "describe the same job",
                                    a->world_size, e0.world_size, b->world_size, e.world_size));
    if (e.rank != e0.rank)
      throw ConfigError(fmt::format("environment: {}={} disagrees with {}={}; both launchers must "
                                    "describe the same job",
                                    a->rank, e0.rank, b->rank, e.rank));
  }
  LaunchEnv out = e0;
  if (const auto addr = env("MASTER_ADDR"); addr && !addr->empty()) {
    out.master_addr = *addr;
  } else if (out.world_size > 1) {
    throw ConfigError(fmt::format(
        "environment: MASTER_ADDR is not set; a {}-rank {} job needs the rendezvous host (export "
        "MASTER_ADDR=<first node's hostname> and MASTER_PORT before launching)",
        out.world_size, out.launcher));
  } else {
    out.master_addr = "127.0.0.1";
  }
  out.launcher_hosts_store = env("TORCHELASTIC_USE_AGENT_STORE").value_or("") == "True";
  bool has_port = false;
  const int port = read_int(env, "MASTER_PORT", 1, &has_port);
  if (has_port) {
    if (port > 65535)
      throw ConfigError(fmt::format("environment: MASTER_PORT='{}', expected a TCP port 1..65535", port));
    out.master_port = port;
  }
  return out;
}

}  // namespace ladder
