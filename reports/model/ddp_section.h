// reports/model/ddp_section.h: a ddp rung report's ddp section as a struct
// (profiler/common/fields.h): the process group, every rank's figures and
// the spread of their medians. Its JSON and its part of
// reports/rung_report.schema.json come from the field lists below.
//
// A rank's figures (per_rank[]) hold a column per step metric declared per
// rank (bench/measure/step_metrics.h, one layer up), so their schema,
// $defs/rank_figures, is generated there (bench/measure/report_schema.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"
#include "reports/stats/stats.h"

namespace ladder {

struct DdpTimeouts {
  double first_step = 0, steady = 0, connect = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("first_step", s.first_step, Doc("the first step's collective timeout").min(0));
    v("steady", s.steady, Doc("every later step's").min(0));
    v("connect", s.connect, Doc("the rendezvous's").min(0));
  }
};

struct DdpTraffic {
  std::string ring_model, measured;
  std::vector<std::string> interfaces;
  ::ladder::fields::Maybe<std::string> gather;  // zero1 only
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("ring_model", s.ring_model);
    v("measured", s.measured);
    v("interfaces", s.interfaces, "rank 0's host's interfaces counted (loopback excluded)");
    v("gather", s.gather);
  }
};

struct DdpSection {
  int64_t world_size = 0;
  std::string backend, launcher, master;
  DdpTimeouts timeouts_s;
  std::string data_sharding;
  ::ladder::fields::Maybe<std::string> comm_timing;
  ::ladder::fields::Maybe<DdpTraffic> traffic;
  std::vector<nlohmann::json> per_rank;  // bench/measure/measure.cpp rank_figures
  std::map<std::string, Summary> across_ranks_of_medians;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("world_size", s.world_size, Doc().min(1));
    v("backend", s.backend, Doc().one_of({"gloo", "nccl"}));
    v("launcher", s.launcher, Doc().one_of({"none", "torchrun", "openmpi", "slurm"}));
    v("master", s.master);
    v("timeouts_s", s.timeouts_s);
    v("data_sharding", s.data_sharding);
    v("comm_timing", s.comm_timing);
    v("traffic", s.traffic,
      "what each rank sends per step: per_rank[].sent_bytes_ring (counted payloads under the ring model) beside "
      "per_rank[].net_tx_bytes (the host's interface counters)");
    v("per_rank", s.per_rank,
      Doc("every rank's figures: its step metrics per step, and their medians").shaped({{"$ref", "#/$defs/rank_figures"}}));
    v("across_ranks_of_medians", s.across_ranks_of_medians,
      "per metric declared across ranks, the spread of the ranks' medians");
  }
};

}  // namespace ladder
