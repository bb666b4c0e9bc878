// reports/render/sections/kernel_tables.cpp: see kernel_tables.h.
#include "reports/render/sections/kernel_tables.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "reports/render/figure_cells.h"

namespace ladder {

namespace {

constexpr size_t kChartBars = 12;  // the largest differences a chart draws
constexpr size_t kNamesInNote = 6;  // flagged families named under a table

// "+1.234 [+0.812, +1.656]", or "+1.234" without an interval.
std::string difference_text(const KernelDifference& d) {
  std::string s = fmt::format("{:+.3f}", d.diff_ms);
  if (d.lo_ms && d.hi_ms) s += fmt::format(" [{:+.3f}, {:+.3f}]", *d.lo_ms, *d.hi_ms);
  return s;
}

// A family table's columns (`families`: the name, its band, each input's ms
// and calls), or a band table's (the band, each input's ms); then each
// input's difference to the baseline and its verdict.
std::vector<Column> columns(bool families, const std::vector<std::string>& labels) {
  const char* first = families ? "family" : "band";
  std::vector<Column> c = {{first, first, "", Align::kLeft, families}};
  if (families) c.push_back({"band", "band", "", Align::kLeft});
  for (size_t i = 0; i < labels.size(); ++i) {
    c.push_back({fmt::format("{}_ms", labels[i]), labels[i] + " ms", ""});
    if (families) c.push_back({fmt::format("{}_calls", labels[i]), labels[i] + " calls", ""});
  }
  for (size_t i = 1; i < labels.size(); ++i) {
    c.push_back({fmt::format("{}_minus_{}_ms", labels[i], labels[0]),
                 fmt::format("{} - {} ms [95 %]", labels[i], labels[0]), ""});
    c.push_back({fmt::format("{}_verdict", labels[i]), fmt::format("{} verdict", labels[i]), "", Align::kLeft});
  }
  return c;
}

// A row of columns(families, ...).
Row row_of(const KernelFamilyRow& r, bool families) {
  std::vector<TableCell> cells = {{r.family, r.family}};
  if (families) cells.push_back({r.band, r.band});
  for (const auto& in : r.inputs) {
    const bool ran = in.processes > 0;
    cells.push_back(ran ? number_cell(in.ms, "{:.3f}") : TableCell{"-", nullptr});
    if (families) cells.push_back(ran ? number_cell(in.calls, "{:.1f}") : TableCell{"-", nullptr});
  }
  for (size_t i = 1; i < r.vs_baseline.size(); ++i) {
    const auto& d = r.vs_baseline[i];
    if (!d) {
      cells.insert(cells.end(), {TableCell{"-", nullptr}, TableCell{"-", nullptr}});
      continue;
    }
    cells.push_back({difference_text(*d), d->diff_ms});
    cells.push_back({d->verdict, d->verdict, verdict_tone(d->verdict)});
  }
  return Row(std::move(cells), "", "");
}

// Under the family table: per input, the families flagged, added and removed.
std::vector<Line> family_notes(const RungKernels& rung, const std::vector<std::string>& labels) {
  std::vector<Line> notes;
  for (size_t i = 1; i < labels.size(); ++i) {
    std::string changed, added, removed;
    size_t flagged = 0, compared = 0, named = 0;
    for (const auto& r : rung.families) {
      const auto& d = i < r.vs_baseline.size() ? r.vs_baseline[i] : std::nullopt;
      if (!d) continue;
      ++compared;
      if (!d->flagged) continue;
      ++flagged;
      if (named++ >= kNamesInNote) continue;
      std::string& to = d->verdict == "added" ? added : d->verdict == "removed" ? removed : changed;
      to += fmt::format("{}{} ({}, {} ms)", to.empty() ? "" : "; ", r.family,
                        d->verdict == "added" || d->verdict == "removed" ? r.band : d->verdict, difference_text(*d));
    }
    std::string text = fmt::format("{} against {}: {} of {} families flagged", labels[i], labels[0],
                                   flagged, compared);
    for (const auto& [what, list] : {std::pair{"", changed}, std::pair{"added: ", added},
                                     std::pair{"removed: ", removed}})
      if (!list.empty()) text += fmt::format("; {}{}", what, list);
    if (named > kNamesInNote) text += fmt::format("; and {} more", named - kNamesInNote);
    notes.push_back({text, "kernels:", flagged ? Tone::kWarn : Tone::kPlain});
  }
  return notes;
}

// Under the band table: the band with the largest gap, with its interval.
std::vector<Line> band_notes(const RungKernels& rung, const std::vector<std::string>& labels) {
  std::vector<Line> notes;
  for (size_t i = 1; i < labels.size(); ++i) {
    const KernelFamilyRow* largest = nullptr;
    for (const auto& r : rung.bands)
      if (i < r.vs_baseline.size() && r.vs_baseline[i] &&
          (!largest || std::fabs(r.vs_baseline[i]->diff_ms) > std::fabs(largest->vs_baseline[i]->diff_ms)))
        largest = &r;
    if (!largest) continue;
    const KernelDifference& d = *largest->vs_baseline[i];
    std::string text = fmt::format("{} against {}: largest gap {} {} ms per step ({})", labels[i],
                                   labels[0], largest->band, difference_text(d), d.verdict);
    // The bands flagged, where the largest gap is not one of them (a
    // disturbed process can make an unresolved gap the largest).
    bool any = false;
    for (const auto& r : rung.bands) {
      const auto& f = i < r.vs_baseline.size() ? r.vs_baseline[i] : std::nullopt;
      if (!f || !f->flagged || &r == largest) continue;
      text += fmt::format("{} {} {} ({})", any ? ";" : "; flagged:", r.band, difference_text(*f), f->verdict);
      any = true;
    }
    notes.push_back({text, "bands:", verdict_tone(d.verdict)});
  }
  return notes;
}

std::string sources_text(const RungKernels& rung, const std::vector<std::string>& labels) {
  std::string s;
  for (size_t i = 0; i < rung.sources.size() && i < labels.size(); ++i)
    if (rung.sources[i] != "kernels")
      s += fmt::format("{}{}: {}", s.empty() ? "" : ", ", labels[i],
                       rung.sources[i] == "none" ? "no valid breakdown"
                                                 : "an older report, each band's 8 largest names only");
  return s.empty() ? "" : " (" + s + ")";
}

// The chart's label of a family: its last C++ component, as a page has room for.
std::string short_family(const std::string& family) {
  const size_t at = family.rfind("::");
  return at == std::string::npos ? family : family.substr(at + 2);
}

Chart difference_chart(const RungKernels& rung, const std::vector<std::string>& labels) {
  Chart c;
  c.id = "chart-kernels-" + rung.cell;
  c.title = fmt::format("{}: the largest kernel differences against {} (ms per step, 95 % intervals)", rung.rung,
                        labels[0]);
  c.y_title = "ms per step";
  c.unit = "ms";
  c.kind = ChartKind::kBars;
  c.reference = 0;
  c.y_covers = {0};
  for (size_t i = 1; i < labels.size(); ++i) c.series.push_back({labels[i] + " - " + labels[0], {}});
  const size_t bars = std::min(rung.families.size(), kChartBars);
  for (size_t k = 0; k < bars; ++k) {
    const KernelFamilyRow& r = rung.families[k];
    // A name two bars share (aten::mul in the optimizer and elsewhere) says its band.
    const std::string label = short_family(r.family);
    const bool shared = std::count_if(rung.families.begin(), rung.families.begin() + long(bars), [&](const auto& o) {
                          return short_family(o.family) == label;
                        }) > 1;
    c.categories.push_back(shared ? label + " (" + r.band + ")" : label);
    for (size_t i = 1; i < labels.size(); ++i) {
      ChartPoint p;
      const auto& d = i < r.vs_baseline.size() ? r.vs_baseline[i] : std::nullopt;
      if (d) {
        p.value = d->diff_ms;
        if (d->lo_ms && d->hi_ms) p.interval = Interval{*d->lo_ms, *d->hi_ms};
        p.hover = fmt::format("{} ({}): {} ms, {}", r.family, r.band, difference_text(*d), d->verdict);
      } else {
        p.status = "missing";
      }
      c.series[i - 1].points.push_back(std::move(p));
    }
  }
  c.empty_note = "no kernel family to compare";
  return c;
}

}  // namespace

KernelView kernel_view(const KernelComparison& kernels, const std::vector<std::string>& labels) {
  KernelView v;
  for (const auto& rung : kernels.rungs) {
    Table families;
    families.title = fmt::format("{}: kernels (CUDA) or operators (CPU) by family, ms and calls per step, mean over "
                                 "each input's processes{}",
                                 rung.rung, sources_text(rung, labels));
    families.tag = "kernels";
    families.columns = columns(/*families=*/true, labels);
    for (const auto& r : rung.families) families.rows.push_back(row_of(r, /*families=*/true));
    families.notes = family_notes(rung, labels);
    Table bands;
    bands.title = fmt::format("{}: bands, ms per step, each difference with its 95 % interval", rung.rung);
    bands.tag = "kernel-bands";
    bands.columns = columns(/*families=*/false, labels);
    for (const auto& r : rung.bands) bands.rows.push_back(row_of(r, /*families=*/false));
    bands.notes = band_notes(rung, labels);
    v.tables.push_back(std::move(families));
    v.tables.push_back(std::move(bands));
  }
  for (size_t k = 0; k < kernels.rungs.size(); ++k) {
    const RungKernels& rung = kernels.rungs[k];
    if (rung.families_flagged > 0 || (v.charts.empty() && k + 1 == kernels.rungs.size()))
      v.charts.push_back(difference_chart(rung, labels));
  }
  return v;
}

}  // namespace ladder
