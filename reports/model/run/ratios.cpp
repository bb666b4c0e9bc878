// reports/model/run/ratios.cpp: the ratio kinds, and how they are computed (see ratios.h).
#include "reports/model/run/ratios.h"

#include <cmath>
#include <stdexcept>

#include "reports/model/run/peer_cells.h"
#include "variants/config/rungs.h"

namespace ladder {

namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The last ok row of `row`'s shape before position `end` (all rows: npos)
// for which `pick` holds; "" when none.
template <class F>
std::string last_cell(const std::vector<SummaryRow>& rows, const SummaryRow& row, size_t end, F pick) {
  std::string cell;
  for (size_t k = 0; k < rows.size() && k < end; ++k)
    if (rows[k].ok() && rows[k].shape() == row.shape() && pick(rows[k])) cell = rows[k].cell;
  return cell;
}

// x fp32: the same shape's fp32 rung (itself: 1).
RatioAgainst vs_fp32(const std::vector<SummaryRow>& rows, size_t i) {
  if (!rows[i].ok()) return {};
  return {true, last_cell(rows, rows[i], std::string::npos,
                          [](const SummaryRow& r) { return !r.is_peer() && r.rung == base_rung().name; })};
}

// x prev: a composite RUNG+SWITCH against RUNG where RUNG ran (ddp+zero1
// against ddp); any other rung against the ok rung above it. A peer is not
// the next rung of the ladder: null.
RatioAgainst vs_previous(const std::vector<SummaryRow>& rows, size_t i) {
  const SummaryRow& row = rows[i];
  if (!row.ok()) return {};
  if (row.is_peer()) return {true, ""};
  const size_t plus = row.rung.find('+');
  if (plus != std::string::npos) {
    const std::string base = row.rung.substr(0, plus);
    const std::string cell = last_cell(rows, row, std::string::npos,
                                       [&](const SummaryRow& r) { return !r.is_peer() && r.rung == base; });
    if (!cell.empty()) return {true, cell};
  }
  return {true, last_cell(rows, row, i, [](const SummaryRow& r) { return !r.is_peer(); })};
}

// What a switch X buys at the top: top over top-X; top+X over top for a
// switch beyond the ladder. Only where the shape's top rung ran.
RatioAgainst effect_at_top(const std::vector<SummaryRow>& rows, size_t i) {
  const SummaryRow& row = rows[i];
  const bool left_out = starts_with(row.rung, "top-"), added = starts_with(row.rung, "top+");
  if (!row.ok() || (!left_out && !added)) return {};
  const std::string top =
      last_cell(rows, row, std::string::npos, [](const SummaryRow& r) { return !r.is_peer() && r.rung == "top"; });
  if (top.empty()) return {};
  return {true, top, added};
}

// --ab: side B's row over side A's of the same cell, paired by round.
RatioAgainst b_over_a(const std::vector<SummaryRow>& rows, size_t i) {
  const SummaryRow& row = rows[i];
  if (row.side != "B" || !row.ok()) return {};
  for (const auto& a : rows)
    if (a.side == "A" && a.ok() && a.bare_cell() == row.bare_cell()) return {true, a.cell};
  return {};
}

// A peer: ladder's peer_base_rung() (the top single-process rung, whose switches
// the peer ran) over the peer.
RatioAgainst ladder_vs_peer(const std::vector<SummaryRow>& rows, size_t i) {
  const SummaryRow& row = rows[i];
  if (!row.is_peer() || !row.ok()) return {};
  return {true,
          last_cell(rows, row, std::string::npos,
                    [](const SummaryRow& r) { return !r.is_peer() && r.rung == peer_base_rung().name; }),
          false};
}

// x compile: each rung against the same shape's torch.compile peer (scripts/peer.py).
RatioAgainst vs_compile(const std::vector<SummaryRow>& rows, size_t i) {
  const SummaryRow& row = rows[i];
  if (!row.ok() || row.is_peer()) return {};
  const std::string peer = last_cell(rows, row, std::string::npos,
                                     [](const SummaryRow& r) { return r.peer.value_or("") == "compile"; });
  if (peer.empty()) return {};
  return {true, peer};
}

bool judged_in_ladder(const RunKind& run, const SummaryRow&) { return !run.ab && !run.ablation; }
bool fp32_judged(const RunKind& run, const SummaryRow& row) {
  return !run.ab && (!run.ablation || starts_with(row.rung, "fp32+"));
}
bool judged_in_ablation(const RunKind& run, const SummaryRow&) { return !run.ab && run.ablation; }
bool judged_in_ab(const RunKind& run, const SummaryRow&) { return run.ab; }
bool never_judged(const RunKind&, const SummaryRow&) { return false; }

}  // namespace

const std::vector<RatioKind>& ratio_kinds() {
  static const std::vector<RatioKind> kKinds = {
      {"speedup_vs_fp32", "x fp32", "the row's tokens/s over the same shape's fp32 rung's", Pairing::kBlocks, false,
       RatioLayout::kFlat, kRatioRunTable,
       "x fp32, x prev: tokens/s ratios between rungs of this run (x prev: against the rung above, or RUNG for a "
       "composite RUNG+SWITCH), with their 95 % interval from the per-process values (rounds as blocks, "
       "reports/stats/block_design.h; none with one process per rung); every ratio of the run (and the peers' line) "
       "is the median of its per-round ratios, so one disturbed round cannot move it; '?': unresolved, the interval "
       "holds 1 and reaches past +-1 %; '*': a process of either cell ran disturbed and was left out (noise line)",
       vs_fp32, fp32_judged},
      {"speedup_vs_previous", "x prev",
       "the row's tokens/s over the rung above it (or RUNG's, for a composite RUNG+SWITCH)", Pairing::kBlocks, false,
       RatioLayout::kFlat, kRatioRunTable, "", vs_previous, judged_in_ladder},
      {"speedup_vs_compile", "x compile", "the rung's tokens/s over the same shape's torch.compile peer's",
       Pairing::kBlocks, false, RatioLayout::kFlat, kRatioRunTable | kRatioOnlyWhereAny,
       "x compile: each rung's tokens/s over the torch.compile peer's of the same shape (scripts/peer.py, the "
       "switches of fused-adamw; above 1 the rung is faster), rounds as blocks",
       vs_compile, never_judged},
      {"effect_at_top", "at the top", "top's tokens/s over top-X's; top+X's over top's (--mode ablation)",
       Pairing::kBlocks, false, RatioLayout::kFlat, kRatioSummaryOnly, "", effect_at_top, judged_in_ablation},
      {"b_over_a", "B/A tok/s", "side B's tokens/s over side A's of the same cell (--ab)", Pairing::kRounds, true,
       RatioLayout::kFlat, kRatioSummaryOnly, "", b_over_a, judged_in_ab},
      {"ladder_vs_peer", "ladder/peer", "ladder's fused-adamw tokens/s over a PyTorch peer's", Pairing::kBlocks,
       false, RatioLayout::kPeerObject, kRatioSummaryOnly, "", ladder_vs_peer, never_judged},
  };
  return kKinds;
}

const RatioKind& ratio_kind(const std::string& key) {
  for (const auto& k : ratio_kinds())
    if (key == k.key) return k;
  throw std::logic_error("ratio_kind: no ratio kind '" + key + "' is declared (reports/model/run/ratios.cpp)");
}

RoundPairs paired_by_round(const ProcessSamples& a, const ProcessSamples& b) {
  auto usable = [](double v) { return std::isfinite(v) && v > 0; };
  std::map<int, double> a_by_round;
  for (size_t k = 0; k < a.values.size() && k < a.rounds.size(); ++k)
    if (usable(a.values[k])) a_by_round[a.rounds[k]] = a.values[k];
  RoundPairs pairs;
  for (size_t k = 0; k < b.values.size() && k < b.rounds.size(); ++k) {
    const auto it = a_by_round.find(b.rounds[k]);
    if (!usable(b.values[k]) || it == a_by_round.end()) continue;
    pairs.a.push_back(it->second);
    pairs.b.push_back(b.values[k]);
    pairs.rounds.push_back(b.rounds[k]);
  }
  return pairs;
}

std::map<std::string, BlockDesign> designs_by_shape(const std::vector<SummaryRow>& rows) {
  std::map<std::string, BlockDesign> designs;
  for (const auto& row : rows) {
    if (!row.ok()) continue;
    const ProcessSamples& s = row.tokens_per_s;
    for (size_t k = 0; k < s.values.size(); ++k)
      if (std::isfinite(s.values[k]) && s.values[k] > 0)
        designs[row.shape()].add(row.cell, k < s.rounds.size() ? s.rounds[k] : int(k) + 1, s.values[k]);
  }
  return designs;
}

namespace {

// One row's ratio of `kind` against `a` (which applies).
RowRatio ratio_of(const RatioKind& kind, const std::vector<SummaryRow>& rows, const SummaryRow& row,
                  const RatioAgainst& a, std::map<std::string, BlockDesign>& designs) {
  RowRatio out;
  if (a.cell.empty()) return out;
  if (a.cell == row.cell) {  // a cell against itself
    out.value = 1.0;
    return out;
  }
  RatioInterval r;
  if (kind.pairing == Pairing::kBlocks) {
    BlockDesign& d = designs[row.shape()];
    r = a.row_over_it ? d.ratio(a.cell, row.cell) : d.ratio(row.cell, a.cell);
  } else {
    const SummaryRow* other = nullptr;
    for (const auto& o : rows)
      if (o.cell == a.cell) other = &o;
    // The rounds where neither side's process was disturbed (the test of
    // cells of each side's design).
    const RoundPairs all = paired_by_round(other->tokens_per_s, row.tokens_per_s);
    RoundPairs p;
    for (size_t k = 0; k < all.rounds.size(); ++k) {
      if (designs[other->shape()].is_disturbed(other->cell, all.rounds[k]) ||
          designs[row.shape()].is_disturbed(row.cell, all.rounds[k])) {
        ++out.left_out;
        continue;
      }
      p.a.push_back(all.a[k]);
      p.b.push_back(all.b[k]);
    }
    if (!p.a.empty()) r = a.row_over_it ? ratio_of_paired(p.a, p.b) : ratio_of_paired(p.b, p.a);
    if (kind.tests && r.has_interval()) out.p = r.p_value;
  }
  if (r.ratio <= 0) return out;
  out.value = r.ratio;
  out.left_out += r.left_out;
  if (r.has_interval()) out.interval = std::make_pair(r.lo, r.hi);
  for (const auto& o : rows)  // the cell it is against, without its side
    if (o.cell == a.cell) out.against = o.bare_cell();
  return out;
}

}  // namespace

double ratio_df(const std::vector<SummaryRow>& rows, const SummaryRow& row, const RatioKind& kind) {
  const auto it = row.ratios.find(kind.key);
  if (it == row.ratios.end() || !it->second.interval) return 0;
  if (kind.pairing == Pairing::kRounds) {
    const size_t pairs = row.tokens_per_s.rounds.size();
    return pairs > 1 ? double(pairs - 1) : 0;
  }
  return designs_by_shape(rows)[row.shape()].residual_df();
}

// Each row's processes that its shape's test of cells left out, with what
// their noise monitors named.
void mark_disturbed(std::vector<SummaryRow>& rows, std::map<std::string, BlockDesign>& designs) {
  for (auto& row : rows) {
    row.disturbed.clear();
    for (const DisturbedProcess& x : designs[row.shape()].disturbed()) {
      if (x.cell != row.cell) continue;
      RowDisturbed d;
      d.round = x.round;
      d.slower_x = x.slower_x;
      d.p_value = x.p_value;
      const auto& rounds = row.tokens_per_s.rounds;
      for (size_t k = 0; k < rounds.size() && k < row.noise.per_process_causes.size(); ++k)
        if (rounds[k] == x.round) d.causes = row.noise.per_process_causes[k];
      row.disturbed.push_back(std::move(d));
    }
  }
}

void compute_ratio(const RatioKind& kind, std::vector<SummaryRow>& rows) {
  auto designs = designs_by_shape(rows);
  mark_disturbed(rows, designs);
  for (size_t i = 0; i < rows.size(); ++i)
    if (const RatioAgainst a = kind.against(rows, i); a.applies)
      rows[i].ratios[kind.key] = ratio_of(kind, rows, rows[i], a, designs);
}

void compute_ratios(std::vector<SummaryRow>& rows, bool only_missing) {
  auto designs = designs_by_shape(rows);
  if (!only_missing) mark_disturbed(rows, designs);
  for (const RatioKind& kind : ratio_kinds())
    for (size_t i = 0; i < rows.size(); ++i) {
      const RatioAgainst a = kind.against(rows, i);
      if (only_missing && rows[i].ratios.count(kind.key)) {  // recorded: its left-out processes, from the rows'
        int left_out = int(rows[i].disturbed.size());
        for (const auto& o : rows)
          if (a.applies && o.cell == a.cell && o.cell != rows[i].cell) left_out += int(o.disturbed.size());
        rows[i].ratios[kind.key].left_out = left_out;
        continue;
      }
      if (a.applies) rows[i].ratios[kind.key] = ratio_of(kind, rows, rows[i], a, designs);
    }
}

}  // namespace ladder
