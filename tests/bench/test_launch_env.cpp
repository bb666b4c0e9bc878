// tests/bench/test_launch_env.cpp: the launcher variables of torchrun, Open MPI and
// Slurm, set by the test, and the errors for inconsistent ones.
#include <map>

#include <gtest/gtest.h>

#include "bench/measure/device/launch_env.h"
#include "variants/config/config.h"

namespace ladder {
namespace {

EnvLookup fake(std::map<std::string, std::string> vars) {
  return [vars](const std::string& k) -> std::optional<std::string> {
    auto it = vars.find(k);
    return it == vars.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
}

std::string error_of(std::map<std::string, std::string> vars) {
  try {
    detect_launch_env(fake(std::move(vars)));
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(LaunchEnv, NoLauncherIsOneProcess) {
  const LaunchEnv e = detect_launch_env(fake({}));
  EXPECT_FALSE(e.distributed());
  EXPECT_EQ(e.world_size, 1);
  EXPECT_EQ(e.rank, 0);
}

TEST(LaunchEnv, Torchrun) {
  const LaunchEnv e = detect_launch_env(fake({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "4"},
                                              {"LOCAL_WORLD_SIZE", "2"}, {"MASTER_ADDR", "node0"},
                                              {"MASTER_PORT", "29400"}}));
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_world_size, 2);
  EXPECT_EQ(e.master_addr, "node0");
  EXPECT_EQ(e.master_port, 29400);
  EXPECT_FALSE(e.launcher_hosts_store);
  EXPECT_TRUE(detect_launch_env(fake({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}}))
                  .launcher_hosts_store);
}

TEST(LaunchEnv, OpenMpiWithExportedMaster) {
  const LaunchEnv e = detect_launch_env(
      fake({{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "8"},
            {"OMPI_COMM_WORLD_LOCAL_SIZE", "4"}, {"MASTER_ADDR", "10.0.0.1"}}));
  EXPECT_EQ(e.launcher, "openmpi");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_world_size, 4);
  EXPECT_EQ(e.master_port, 29500);  // the documented default
}

TEST(LaunchEnv, SlurmWithHeterogeneousTasksPerNode) {
  const LaunchEnv e = detect_launch_env(fake({{"SLURM_PROCID", "2"}, {"SLURM_LOCALID", "0"}, {"SLURM_NTASKS", "4"},
                                              {"SLURM_NTASKS_PER_NODE", "2(x2)"}, {"MASTER_ADDR", "gpu-001"},
                                              {"MASTER_PORT", "12345"}}));
  EXPECT_EQ(e.launcher, "slurm");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.local_rank, 0);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_world_size, 1);  // "2(x2)" is not a plain number
  EXPECT_EQ(e.master_addr, "gpu-001");
}

TEST(LaunchEnv, TorchrunInsideSlurmMustAgree) {
  const auto ok = detect_launch_env(fake({{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "1"},
                                          {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}}));
  EXPECT_EQ(ok.launcher, "torchrun");
  const std::string err = error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "0"},
                                    {"OMPI_COMM_WORLD_SIZE", "4"}, {"MASTER_ADDR", "h"}});
  EXPECT_NE(err.find("WORLD_SIZE=2 disagrees with OMPI_COMM_WORLD_SIZE=4"), std::string::npos) << err;
  const std::string rank_err =
      error_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "h"}});
  EXPECT_NE(rank_err.find("RANK=0 disagrees with SLURM_PROCID=1"), std::string::npos) << rank_err;
}

TEST(LaunchEnv, BadValuesNameTheVariable) {
  EXPECT_NE(error_of({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x', expected an integer >= 0"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}}).find("RANK=2 is not below WORLD_SIZE=2"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}}).find("WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "0"}}).find("WORLD_SIZE='0', expected an integer >= 1"),
            std::string::npos);
  EXPECT_NE(error_of({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}}).find("MASTER_ADDR is not set"),
            std::string::npos);
  EXPECT_NE(error_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "70000"}}).find("MASTER_PORT"),
            std::string::npos);
}

}  // namespace
}  // namespace ladder
