// reports/model/run/summary_doc.h: summary.json as `ladder run` writes it, as
// structs (profiler/common/fields.h). The writers (bench/run/summary_rows.cpp,
// bench/run/runner.cpp) fill them, and reports/run_summary.schema.json is
// generated from them (run_summary_schema, `ladder schema --summary`).
//
// A row's fixed fields are SummaryRowDoc's. Its figures and ratios are
// declarations: a column per run figure (reports/model/report/run_figures.h), and
// per ratio kind (reports/model/run/ratios.h) its value, interval and the cell it
// is against (a p-value where it tests); those columns' schema is added from
// the declarations, never listed here. The reader's model of a summary is
// reports/model/run/run_model.h (summary_json.h reads it leniently).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profiler/trace/breakdown_section.h"
#include "profiler/common/fields.h"
#include "reports/model/report/identity_section.h"
#include "reports/model/report/roofline_section.h"
#include "reports/model/run/run_model.h"

namespace ladder {

// A cell's processes, with --repeat N (or a round that never ran).
struct RepeatsDoc {
  int64_t count = 0;
  std::vector<std::string> reports;
  ::ladder::fields::Maybe<int64_t> failed_repeat;
  ::ladder::fields::Maybe<std::vector<int64_t>> not_run, rounds;
  template <class S, class V>
  static void fields(S& s, V& v) {
    using Doc = ::ladder::fields::Doc;
    v("count", s.count, Doc().min(1));
    v("reports", s.reports);
    v("failed_repeat", s.failed_repeat, Doc("the round of the first process that did not end ok").min(1));
    v("not_run", s.not_run,
      Doc("rounds this cell was planned in whose process never ran (the run was interrupted or stopped first; "
          "--resume runs them)")
          .min(1));
    v("rounds", s.rounds, Doc().min(1));
  }
};

struct NoiseDoc {
  bool quiet = false;
  double cv_limit = 0, steps_cv = 0;
  std::optional<double> processes_cv;  // null with one process
  ::ladder::fields::Maybe<std::vector<std::string>> causes;
  ::ladder::fields::Maybe<std::vector<std::vector<std::string>>> per_process_causes;
  ::ladder::fields::Maybe<std::string> basis;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("quiet", s.quiet);
    v("cv_limit", s.cv_limit);
    v("steps_cv", s.steps_cv);
    v("processes_cv", s.processes_cv);
    v("basis", s.basis);
    v("causes", s.causes,
      "what the processes' noise monitors named (steal, lost CPU time, context switches, load, GPU throttling)");
    v("per_process_causes", s.per_process_causes,
      "with --repeat: what each process's noise monitors named, parallel to the row's rounds");
  }
};

struct ProbeDoc {
  std::vector<std::optional<double>> speed_index_per_s;  // null: a process without a probe
  ::ladder::fields::Maybe<double> half_range_pct, dt_half_range_pct, correlation_with_dt;
  ::ladder::fields::Maybe<bool> explains_dt_spread;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("speed_index_per_s", s.speed_index_per_s);
    v("half_range_pct", s.half_range_pct);
    v("dt_half_range_pct", s.dt_half_range_pct);
    v("correlation_with_dt", s.correlation_with_dt);
    v("explains_dt_spread", s.explains_dt_spread);
  }
};

// A ratio's 95 % interval, (lo, hi), or null.
nlohmann::json ratio_interval_schema();

// A peer's row: ladder's peer base rung's tokens/s over the peer's (the
// ratio kind ladder_vs_peer, laid out as an object).
struct LadderVsPeerDoc {
  std::string rung;
  std::optional<double> tokens_per_s_ratio;
  ::ladder::fields::Maybe<std::string> note;
  ::ladder::fields::Maybe<nlohmann::json> tokens_per_s_interval;  // [lo, hi], or null
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("rung", s.rung);
    v("tokens_per_s_ratio", s.tokens_per_s_ratio);
    v("note", s.note);
    v("tokens_per_s_interval", s.tokens_per_s_interval,
      ::ladder::fields::Doc("the 95 % interval of the ratio (lo, hi)").shaped(ratio_interval_schema()));
  }
};

struct SummaryRowDoc {
  template <class T>
  using Maybe = ::ladder::fields::Maybe<T>;
  std::string cell, rung;
  Maybe<std::string> side, preset;
  Maybe<int64_t> batch, seq;
  Maybe<std::map<std::string, bool>> switches;
  std::string status;
  Maybe<std::string> reason, report, sample, peak_kind;
  Maybe<nlohmann::json> failure;
  Maybe<PeerSection> peer;
  nlohmann::json parity;  // bench/run/parity.h: the rung report's parity, or why there is none
  Maybe<RepeatsDoc> repeats;
  Maybe<std::vector<int64_t>> rounds;
  Maybe<std::map<std::string, std::vector<std::optional<double>>>> per_process;
  Maybe<std::map<std::string, std::string>> markers;
  Maybe<double> dt_ms_cv, dt_ms_process_cv;
  Maybe<std::vector<double>> dt_ms_process_medians;
  Maybe<ProbeDoc> probe;
  Maybe<NoiseDoc> noise;
  Maybe<std::optional<profiler::OpCounts>> op_counts;
  Maybe<std::map<std::string, bool>> effective;
  Maybe<std::vector<RowDisturbed>> disturbed;  // written with the ratios (summary_json.h write_ratios)
  Maybe<std::vector<SlowRank>> slow_rank;      // a ddp cell's, per process
  template <class S, class V>
  static void fields(S& s, V& v);
  // The figure and ratio columns, from their declarations, and what an ok
  // row must have.
  static void schema_extra(nlohmann::json& schema);
};

struct PeersDoc {
  std::vector<std::string> names;
  std::string source;
  ::ladder::fields::Maybe<std::string> compared_with, loss_parity;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("names", s.names, ::ladder::fields::Doc().one_of({"eager", "compile"}));
    v("source", s.source);
    v("compared_with", s.compared_with);
    v("loss_parity", s.loss_parity);
  }
};

struct ResolutionDoc {
  double change_pct = 0, min_pct = 0, max_pct = 0;
  int64_t ratios = 0, rounds = 0;
  ::ladder::fields::Maybe<std::string> basis;
  std::string line;
  template <class S, class V>
  static void fields(S& s, V& v) {
    v("change_pct", s.change_pct);
    v("min_pct", s.min_pct);
    v("max_pct", s.max_pct);
    v("ratios", s.ratios);
    v("rounds", s.rounds);
    v("basis", s.basis);
    v("line", s.line);
  }
};

struct RunSummaryDoc {
  template <class T>
  using Maybe = ::ladder::fields::Maybe<T>;
  int64_t schema_version = 0;
  std::string kind, run_id, mode, status, started_at, finished_at;
  std::vector<std::string> argv;
  int64_t parity_steps = 0;
  Maybe<int64_t> repeats;
  Maybe<std::optional<std::string>> stopped_because;
  Maybe<std::optional<nlohmann::json>> repeat_auto, ab;
  Maybe<SummaryRoofline> roofline;  // the run's roofline.json, or why there is none
  Maybe<PeersDoc> peers;
  Maybe<std::optional<ResolutionDoc>> resolution;
  std::vector<std::string> missing;
  std::vector<nlohmann::json> rows;  // SummaryRowDoc, with the figures and ratios
  template <class S, class V>
  static void fields(S& s, V& v);
};

// reports/run_summary.schema.json: the structs above, and the figures' and
// ratios' declarations.
nlohmann::json run_summary_schema();

template <class S, class V>
void SummaryRowDoc::fields(S& s, V& v) {
  using Doc = ::ladder::fields::Doc;
  v("cell", s.cell);
  v("rung", s.rung);
  v("side", s.side, Doc("the side of a one-run A/B comparison (--ab) this row is on").one_of({"A", "B"}));
  v("preset", s.preset);
  v("batch", s.batch);
  v("seq", s.seq);
  v("switches", s.switches, "the rung's switches: each on or off");
  v("status", s.status,
    Doc().one_of({"ok", "failed", "oom", "diverged", "crashed", "timeout", "missing", "not_runnable", "skipped"}));
  v("reason", s.reason);
  v("failure", s.failure, Doc("the deciding report's failure").shaped({{"type", "object"}}));
  v("report", s.report);
  v("parity", s.parity, Doc().shaped({{"type", "object"}, {"required", {"status"}}}));
  v("sample", s.sample,
    "what the dt/tok/s/MFU figures are: the median of one process's steps, or of N per-process medians");
  v("repeats", s.repeats);
  v("rounds", s.rounds, Doc("the round each process of the cell ran in, parallel to per_process").min(1));
  v("per_process", s.per_process,
    "each run-level figure's value per process (--repeat N: N values), in repeat order");
  v("markers", s.markers, "text a figure's cell carries after its value ('p': MFU against the measured roofline)");
  v("dt_ms_cv", s.dt_ms_cv, "the CV of dt over a process's measured steps (the median over processes)");
  v("dt_ms_process_medians", s.dt_ms_process_medians);
  v("dt_ms_process_cv", s.dt_ms_process_cv);
  v("probe", s.probe,
    "the speed probe of the cell's processes (bench/measure/observers/speed_probe.h): each process's speed index (null "
    "without a probe) and, when every process has one, whether the machine's speed explains their spread in dt "
    "(reports/stats/machine_speed.h)");
  v("noise", s.noise,
    "whether the machine was quiet while the cell ran: dt's CV over steps and over processes against cv_limit, and "
    "what the noise monitors named");
  v("peak_kind", s.peak_kind);
  v("op_counts", s.op_counts);
  v("effective", s.effective, "each switch the rung enables: whether it took effect");
  v("disturbed", s.disturbed,
    "the cell's processes that the test of cells (reports/stats/block_design.h) found slowed by something else on "
    "the machine, and left out of every ratio");
  v("slow_rank", s.slow_rank, "a multi-rank cell: each process's verdict on which rank the others wait for "
                              "(its report's ddp.slow_rank), in the order of `rounds`");
  v("peer", s.peer, "a PyTorch peer's row (its report's `peer`); peers take no part in loss parity");
}

template <class S, class V>
void RunSummaryDoc::fields(S& s, V& v) {
  using Doc = ::ladder::fields::Doc;
  v("schema_version", s.schema_version, Doc().one_of({3}));
  v("kind", s.kind, Doc().one_of({"ladder.run_summary"}));
  v("run_id", s.run_id);
  v("mode", s.mode, Doc().one_of({"ladder", "ablation"}));
  v("status", s.status, Doc().one_of({"complete", "partial", "interrupted", "stopped"}));
  v("stopped_because", s.stopped_because,
    "status stopped: the write or launch failure in ladder run that stopped it (what failed, and where); null "
    "otherwise");
  v("started_at", s.started_at, Doc().as("date-time"));
  v("finished_at", s.finished_at, Doc().as("date-time"));
  v("argv", s.argv);
  v("parity_steps", s.parity_steps);
  v("repeats", s.repeats);
  v("repeat_auto", s.repeat_auto,
    Doc("what --repeat auto did: the target, the budget, the rounds run, why it stopped, the ratios still wider "
        "than the target (`unresolved`: wider than --target-ci, which is not the table's unresolved, an interval "
        "that holds 1)")
        .shaped({{"type", "object"}}));
  v("ab", s.ab, Doc("a one-run A/B comparison (--ab): what differs between the sides").shaped({{"type", "object"}}));
  v("roofline", s.roofline,
    "the device's ceilings, measured once before the rungs (roofline.json): matmul TFLOP/s per precision (every "
    "rung's MFU 'p' divides by it) and the memory bandwidth");
  v("peers", s.peers, "the PyTorch peers asked for (--peers) and why; their rows carry `peer`");
  v("resolution", s.resolution,
    "--ab and --repeat auto: the smallest change this run's rounds resolve at the noise they measured "
    "(bench/run/rounds.h resolvable_change)");
  v("missing", s.missing, "the cells that produced no report");
  v("rows", s.rows, Doc("one per cell, in the matrix's order").shaped({{"$ref", "#/$defs/row"}}));
}

}  // namespace ladder
