// reports/model/report/ddp_section.h: a ddp rung report's ddp section as a struct
// (profiler/common/fields.h): the process group, every rank's figures and
// the spread of their medians. Its JSON and its part of
// reports/rung_report.schema.json come from the field lists below.
//
// A rank's figures (per_rank[]) hold a column per step metric declared per
// rank (bench/measure/harness/step_metrics.h, one layer up), so their schema,
// $defs/rank_figures, is generated there (bench/measure/report/report_schema.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/common/fields.h"
#include "profiler/trace/breakdown_section.h"
#include "reports/model/report/slow_rank.h"
#include "reports/model/report/step_section.h"
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

// A rank's phases per measured step (ddp.per_rank[].phases_ms), the
// communication wait taken out of the phase it happened in: backward less
// the exposed all-reduce, optimizer less ZeRO-1's gather; `communication`
// is that wait. Parallel to the rank's step columns.
struct RankPhaseSteps {
  std::vector<double> data, forward, backward, optimizer, communication;
  RankSteps as_rank_steps(int64_t rank) const { return {rank, {data, forward, backward, optimizer}, communication}; }
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("data", s.data);
    v("forward", s.forward);
    v("backward", s.backward, "less the exposed all-reduce wait");
    v("optimizer", s.optimizer, "less ZeRO-1's parameter gather");
    v("communication", s.communication, "the exposed all-reduce wait and ZeRO-1's gather");
  }
};

// The test-only hook that slowed one rank (bench/measure/observers/rank_slowdown.h).
struct TestSlowRank {
  int64_t rank = 0;
  double pct = 0;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("rank", s.rank, Doc().min(0));
    v("pct", s.pct, Doc("each step of that rank spun for this share of its shortest recent step's host time, in "
                        "CPU time, at the end of its forward phase").min(0));
  }
};

// One rank's figures in a ddp report (ddp.per_rank[]): these fields, and a
// column per step metric declared per rank or across ranks (its values per
// measured step), with every column's median. $defs/rank_figures in the
// schema is this struct's, with the columns added
// (bench/measure/report/report_schema.cpp); DdpSection::rank_facts reads it back.
struct RankFacts {
  int64_t rank = 0, local_rank = 0;
  std::string host;
  // Always written; absent in reports from before they were (2026-11-25).
  ::ladder::fields::Maybe<int64_t> peak_rss_bytes, peak_reserved_bytes;
  ::ladder::fields::Maybe<std::optional<int64_t>> peak_allocated_bytes;
  // Absent in reports from before they were (2026-12-02).
  ::ladder::fields::Maybe<RankPhaseSteps> phases_ms, cpu_phases_ms;
  ::ladder::fields::Maybe<profiler::PerCategory<double>> bands_ms;
  std::map<std::string, double> median;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("rank", s.rank, Doc().min(0));
    v("local_rank", s.local_rank, Doc().min(0));
    v("host", s.host);
    v("peak_rss_bytes", s.peak_rss_bytes);
    v("peak_reserved_bytes", s.peak_reserved_bytes);
    v("peak_allocated_bytes", s.peak_allocated_bytes,
      "this rank's peak live tensor storage over the measured steps (CUDA's allocated bytes, or the CPU's counted)");
    v("phases_ms", s.phases_ms, "this rank's phases per measured step, the communication wait taken out of them");
    v("cpu_phases_ms", s.cpu_phases_ms,
      "on a CPU: the process's CPU time in each phase over its intra-op threads, per measured step (the all-reduce "
      "wait's left out of backward; communication is the wall wait): the rank's own work where a host's ranks "
      "share its cores, which the slow-rank verdict takes");
    v("bands_ms", s.bands_ms, "this rank's op breakdown: each band's ms per profiled step (op_breakdown.categories_ms)");
    v("median", s.median, "each column's median");
  }
};

// One rank's figures (ddp.per_rank[]): its facts and, beside them in the
// same object, a column per step metric declared per rank or across ranks
// (no `step` column). It converts itself: the facts by their field list,
// every other key a column ($defs/rank_figures in the schema).
struct RankFigures {
  RankFacts facts;
  std::map<std::string, StepColumn> columns;
};
void to_json(nlohmann::json& j, const RankFigures& r);
void from_json(const nlohmann::json& j, RankFigures& r);

struct DdpSection {
  int64_t world_size = 0;
  std::string backend, launcher, master;
  DdpTimeouts timeouts_s;
  std::string data_sharding;
  ::ladder::fields::Maybe<std::string> comm_timing;
  ::ladder::fields::Maybe<DdpTraffic> traffic;
  std::vector<RankFigures> per_rank;  // bench/measure/measure.cpp rank_figures
  std::map<std::string, Summary> across_ranks_of_medians;
  ::ladder::fields::Maybe<SlowRank> slow_rank;  // absent in reports from before it (2026-12-02)
  ::ladder::fields::Maybe<TestSlowRank> test_slow_rank;
  // Each rank's facts, rank 0 first.
  std::vector<RankFacts> rank_facts() const;
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
    v("slow_rank", s.slow_rank, "which rank the others wait for (reports/model/report/slow_rank.h)");
    v("test_slow_rank", s.test_slow_rank, "test-only: the rank LADDER_TEST_SLOW_RANK slowed; absent when unset");
  }
};

}  // namespace ladder
