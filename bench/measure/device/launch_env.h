// bench/measure/device/launch_env.h: where this process sits in a multi-process job, read
// from the environment its launcher set.
//
// One binary runs as a rank under the launchers clusters already have, so the
// transport is never ours:
//   torchrun --no-python (and `ladder run --nproc-per-node N`):
//       RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT
//   mpirun (Open MPI): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK,
//       OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE
//   srun (Slurm): SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS
//       (SLURM_NTASKS_PER_NODE when it is a plain number)
// mpirun and srun do not say where the rendezvous is: export MASTER_ADDR (the
// first node's hostname, e.g. `scontrol show hostnames "$SLURM_JOB_NODELIST" |
// head -n1`) and optionally MASTER_PORT (default 29500) before launching.
// If torchrun's variables are present beside MPI's or Slurm's they must agree.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace ladder {

struct LaunchEnv {
  std::string launcher = "none";  // "none", "torchrun", "openmpi", "slurm"
  int rank = 0, local_rank = 0;
  int world_size = 1, local_world_size = 1;
  std::string master_addr;  // empty for a single process
  int master_port = 29500;
  // torchrun's agent already serves the TCPStore at MASTER_ADDR:MASTER_PORT
  // (TORCHELASTIC_USE_AGENT_STORE=True): rank 0 joins it as a client.
  bool launcher_hosts_store = false;
  bool distributed() const { return launcher != "none"; }
};

// Reads a variable; nullopt when unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// Throws ConfigError naming the variable, its value and what was expected:
// a non-integer or out-of-range rank, sizes that disagree between launchers,
// a missing MASTER_ADDR when the world has more than one rank.
LaunchEnv detect_launch_env(const EnvLookup& env);

}  // namespace ladder
