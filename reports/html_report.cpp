// reports/html_report.cpp: see html_report.h. The comparison JSON is first
// read defensively into a small Page (labels, rungs, one Cell per rung and
// input); each section and each chart is then one function. The charts share
// one set of helpers: Scale, nice_ticks, y_axis, Bands/x_band_labels, legend.
#include "reports/html_report.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "reports/stats.h"

namespace ladder {
namespace {

using nlohmann::json;

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"};
constexpr double kChartWidthPx = 1100;
constexpr double kCharWidthPx = 7.0;  // average glyph width of 12 px sans-serif
constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
constexpr const char* kDash = "\u2013";

const char* colour(size_t input) { return kPalette[input % std::size(kPalette)]; }

std::string escape_html(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// At most `max_chars` bytes, cut on a UTF-8 boundary, with an ellipsis.
std::string shorten(const std::string& s, size_t max_chars) {
  if (s.size() <= max_chars) return s;
  size_t cut = max_chars - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return s.substr(0, cut) + "\u2026";
}

// ---- the comparison, read defensively ------------------------------------------
// obj[key], or null when obj is not an object or lacks the key (iterating null yields nothing).
const json& member(const json& obj, const char* key) {
  static const json kNull;
  return obj.is_object() && obj.contains(key) ? obj[key] : kNull;
}
const json& array_at(const json& obj, const char* key) {
  static const json kEmpty = json::array();
  return member(obj, key).is_array() ? member(obj, key) : kEmpty;
}
std::optional<double> number(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
  return obj[key].get<double>();
}
std::string text(const json& obj, const char* key, const std::string& fallback = kDash) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_string()) return fallback;
  return obj[key].get<std::string>();
}
std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.is_null() ? kDash : v.dump();
}

struct Cell {
  std::string status = "missing";
  std::optional<double> dt_ms, tokens_per_s, mfu_pct, peak_gib, speedup_vs_fp32;
  std::vector<double> dt_ms_samples;
  std::vector<std::pair<std::string, double>> breakdown_ms;  // op-breakdown category -> ms per step
  json breakdown_top;  // op-breakdown category -> [{name, ms, calls}], largest first
};

// The op breakdown's categories, bottom to top of the stacked chart, with
// their own colours: GEMMs at the base, so that the elementwise band that
// fusion removes sits right above them.
struct Category {
  const char* key;
  const char* label;
  const char* colour;
};
constexpr Category kCategories[] = {
    {"gemm", "GEMM", "#4e79a7"},           {"attention", "attention", "#76b7b2"},
    {"elementwise_norm", "elementwise/norm", "#e15759"}, {"softmax_loss", "loss", "#f28e2b"},
    {"optimizer", "optimizer", "#59a14f"}, {"memcpy_memset", "memcpy/memset", "#edc948"},
    {"communication", "communication", "#b07aa1"},      {"idle_other", "idle/other", "#bab0ac"}};

struct Page {
  std::vector<std::string> labels;       // one per input; input 0 is the baseline
  std::vector<std::string> rungs;        // in comparison order
  std::vector<std::vector<Cell>> cells;  // [rung][input]
};

Page read_page(const json& cmp) {
  Page page;
  for (const auto& in : array_at(cmp, "inputs"))
    page.labels.push_back(text(in, "label", fmt::format("input {}", page.labels.size())));
  for (const auto& rung : array_at(cmp, "rungs")) {
    page.rungs.push_back(text(rung, "rung"));
    std::vector<Cell> row(page.labels.size());
    const json& inputs = array_at(rung, "inputs");
    for (size_t i = 0; i < row.size() && i < inputs.size(); ++i) {
      const json& in = inputs[i];
      Cell& c = row[i];
      c.status = text(in, "status", "missing");
      c.dt_ms = number(in, "dt_ms_median");
      c.tokens_per_s = number(in, "tokens_per_s_median");
      c.mfu_pct = number(in, "mfu_pct");
      c.speedup_vs_fp32 = number(in, "speedup_vs_fp32");
      if (auto bytes = number(in, "peak_bytes")) c.peak_gib = *bytes / kBytesPerGiB;
      for (const auto& s : array_at(in, "dt_ms_samples"))
        if (s.is_number()) c.dt_ms_samples.push_back(s.get<double>());
      const json& breakdown = member(in, "op_breakdown_ms");
      for (const auto& cat : kCategories)
        if (auto ms = number(breakdown, cat.key)) c.breakdown_ms.emplace_back(cat.key, *ms);
      c.breakdown_top = member(in, "op_breakdown_top");
    }
    page.cells.push_back(std::move(row));
  }
  return page;
}

// ---- number formatting ------------------------------------------------------------
std::string fixed(std::optional<double> v, int decimals, const char* suffix = "") {
  return v ? fmt::format("{:.{}f}{}", *v, decimals, suffix) : kDash;
}
// The SI multiple ({1e3, "k"}, ...) to write `magnitude` with.
std::pair<double, const char*> si_multiple(double magnitude) {
  for (auto [scale, suffix] : {std::pair(1e9, "G"), std::pair(1e6, "M"), std::pair(1e3, "k")})
    if (std::fabs(magnitude) >= scale) return {scale, suffix};
  return {1.0, ""};
}
// 148945 -> "149k", 16384 -> "16.4k", 3.64 -> "3.64".
std::string compact(double v) {
  const auto [scale, suffix] = si_multiple(v);
  const double a = std::fabs(v / scale);
  return fmt::format("{:.{}f}{}", v / scale, a >= 100 ? 0 : a >= 10 ? 1 : 2, suffix);
}
// Tick labels show just the digits their spacing needs: 20k, 0.5, 2.5.
std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-6) return "0";
  const auto [scale, suffix] = si_multiple(step);
  const int decimals = std::max(0, int(std::ceil(-std::log10(step / scale) - 1e-9)));
  return fmt::format("{:.{}f}{}", v / scale, decimals, suffix);
}
std::string p_value_text(std::optional<double> p) {
  if (!p) return kDash;
  return *p < 1e-3 ? fmt::format("{:.1e}", *p) : fmt::format("{:.3f}", *p);
}

// ---- shared chart helpers -----------------------------------------------------------
struct Box {
  double left, top, right, bottom;  // px
  double width() const { return right - left; }
  double height() const { return bottom - top; }
};

// Maps [lo, hi] linearly onto [from_px, to_px] (to_px < from_px for y).
struct Scale {
  double lo, hi, from_px, to_px;
  double operator()(double v) const { return hi == lo ? from_px : from_px + (v - lo) / (hi - lo) * (to_px - from_px); }
};

// About `target` round-numbered ticks (1, 2, 5 x 10^k apart) covering [lo, hi].
std::vector<double> nice_ticks(double lo, double hi, int target = 5) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / target, magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * magnitude;
  std::vector<double> ticks;
  for (long k = long(std::floor(lo / step + 1e-9)); k <= long(std::ceil(hi / step - 1e-9)); ++k)
    ticks.push_back(double(k) * step);
  return ticks;
}

std::string svg_line(const char* css_class, double x1, double y1, double x2, double y2, const char* stroke = nullptr) {
  return fmt::format(R"(<line class="{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"{}/>)", css_class, x1, y1, x2, y2,
                     stroke ? fmt::format(" stroke=\"{}\"", stroke) : "");
}

// Gridlines, tick labels and the rotated title of a y axis on `plot`'s left.
std::string y_axis(const Box& plot, const Scale& y, const std::vector<double>& ticks, const std::string& title) {
  const double step = ticks.size() > 1 ? ticks[1] - ticks[0] : 1;
  std::string s;
  for (double t : ticks)
    s += svg_line("grid", plot.left, y(t), plot.right, y(t)) +
         fmt::format(R"(<text class="tick" x="{:.1f}" y="{:.1f}" text-anchor="end">{}</text>)", plot.left - 6, y(t) + 4,
                     tick_label(t, step));
  s += svg_line("axis", plot.left, plot.top, plot.left, plot.bottom) +
       svg_line("axis", plot.left, plot.bottom, plot.right, plot.bottom);
  s += fmt::format(R"~(<text class="axis-title" text-anchor="middle" )~"
                   R"~(transform="translate({:.1f},{:.1f}) rotate(-90)">{}</text>)~",
                   plot.left - 54, (plot.top + plot.bottom) / 2, escape_html(title));
  return s;
}

// One band per rung along x, one slot per input inside each band.
struct Bands {
  Box plot;
  size_t n_bands, n_slots;
  double band_width() const { return plot.width() / double(std::max<size_t>(n_bands, 1)); }
  double centre(size_t band) const { return plot.left + (double(band) + 0.5) * band_width(); }
  double slot_width() const { return band_width() * 0.8 / double(std::max<size_t>(n_slots, 1)); }
  double slot_centre(size_t band, size_t slot) const {
    return plot.left + double(band) * band_width() + band_width() * 0.1 + (double(slot) + 0.5) * slot_width();
  }
};

constexpr size_t kMaxLabelChars = 28;
bool labels_fit(const std::vector<std::string>& names, double band_width) {
  for (const auto& n : names)
    if (double(std::min(n.size(), kMaxLabelChars)) * kCharWidthPx + 8 > band_width) return false;
  return true;
}
// Height below the plot that the rung labels need (rotated 35° when they do not fit).
double x_labels_height(const std::vector<std::string>& names, double band_width) {
  if (labels_fit(names, band_width)) return 28;
  size_t longest = 0;
  for (const auto& n : names) longest = std::max(longest, std::min(n.size(), kMaxLabelChars));
  return 24 + double(longest) * kCharWidthPx * std::sin(35.0 * 3.14159265358979 / 180.0);
}
std::string x_band_labels(const Bands& bands, const std::vector<std::string>& names) {
  const bool fit = labels_fit(names, bands.band_width());
  std::string s;
  for (size_t b = 0; b < names.size(); ++b) {
    const double x = bands.centre(b), y = bands.plot.bottom + 18;
    s += fit ? fmt::format(R"(<text class="band" x="{:.1f}" y="{:.1f}" text-anchor="middle">)", x, y)
             : fmt::format(R"~(<text class="band" x="{0:.1f}" y="{1:.1f}" text-anchor="end" )~"
                           R"~(transform="rotate(-35 {0:.1f} {1:.1f})">)~", x, y);
    s += fmt::format("<title>{0}</title>{1}</text>", escape_html(names[b]), escape_html(shorten(names[b], kMaxLabelChars)));
  }
  return s;
}

// Legend entries (swatch + input label) laid out in rows that wrap at max_width.
struct LegendSlot { double x, y; };
std::vector<LegendSlot> legend_layout(const std::vector<std::string>& labels, double left, double top, double max_width) {
  std::vector<LegendSlot> slots;
  double x = left, y = top;
  for (const auto& l : labels) {
    const double w = 22 + double(std::min(l.size(), kMaxLabelChars)) * kCharWidthPx + 18;
    if (x > left && x + w > left + max_width) x = left, y += 20;
    slots.push_back({x, y});
    x += w;
  }
  return slots;
}
// `colours` empty: the inputs' palette.
std::string legend(const std::vector<std::string>& labels, const std::vector<LegendSlot>& slots,
                   const std::vector<std::string>& colours = {}) {
  std::string s;
  for (size_t i = 0; i < labels.size(); ++i)
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="14" height="14" rx="2" fill="{}"/>)"
                     R"(<text class="legend" x="{:.1f}" y="{:.1f}">{}</text>)",
                     slots[i].x, slots[i].y, colours.empty() ? colour(i) : colours[i].c_str(), slots[i].x + 20,
                     slots[i].y + 11, escape_html(shorten(labels[i], kMaxLabelChars)));
  return s;
}

// An SVG with a title, a legend of the inputs and a band plot below them.
struct Frame {
  double width, height;
  Bands bands;
  std::vector<LegendSlot> legend_slots;
};
// `legend_labels` empty: the inputs.
Frame band_frame(const Page& page, double plot_height_px, const std::vector<std::string>& legend_labels = {}) {
  const double left = 84, right = 16;
  auto slots = legend_layout(legend_labels.empty() ? page.labels : legend_labels, left, 34, kChartWidthPx - left - right);
  const double top = (slots.empty() ? 34 : slots.back().y + 14) + 18;
  const double band_width = (kChartWidthPx - left - right) / double(std::max<size_t>(page.rungs.size(), 1));
  const Box plot{left, top, kChartWidthPx - right, top + plot_height_px};
  return {kChartWidthPx, plot.bottom + x_labels_height(page.rungs, band_width) + 8,
          {plot, page.rungs.size(), page.labels.size()}, std::move(slots)};
}
std::string open_chart(const char* id, const Frame& f, const std::string& title, const Page& page,
                       const std::vector<std::string>& legend_labels = {},
                       const std::vector<std::string>& legend_colours = {}) {
  return fmt::format(R"(<svg class="chart" id="{0}" xmlns="http://www.w3.org/2000/svg" width="{1:.0f}" height="{2:.0f}" )"
                     R"(viewBox="0 0 {1:.0f} {2:.0f}" role="img" aria-label="{3}"><title>{3}</title>)"
                     R"(<text class="chart-title" x="{4:.1f}" y="20">{3}</text>)",
                     id, f.width, f.height, escape_html(title), f.bands.plot.left) +
         legend(legend_labels.empty() ? page.labels : legend_labels, f.legend_slots, legend_colours) +
         x_band_labels(f.bands, page.rungs);
}

// ---- the charts -------------------------------------------------------------------------
// In place of a value: the cell's status ("missing", "failed") written upwards
// from the baseline, or a dash when the status is ok but the value is absent.
std::string absent_mark(const Cell& cell, double x, const Bands& bands) {
  if (cell.status == "ok" || bands.slot_width() < 14)
    return fmt::format(R"(<text class="na" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x,
                       bands.plot.bottom - 5, kDash);
  return fmt::format(R"~(<text class="na" x="{0:.1f}" y="{1:.1f}" transform="rotate(-90 {0:.1f} {1:.1f})">{2}</text>)~",
                     x + 4, bands.plot.bottom - 6, escape_html(shorten(cell.status, 16)));
}

// Grouped bars of one metric: one group per rung, one bar per input.
std::string grouped_bar_chart(const Page& page, const char* id, const std::string& title, const std::string& y_title,
                              std::optional<double> Cell::*metric, const char* unit) {
  double max_value = 0;
  for (const auto& row : page.cells)
    for (const auto& c : row) max_value = std::max(max_value, (c.*metric).value_or(0));
  const Frame f = band_frame(page, 260);
  const auto ticks = nice_ticks(0, max_value > 0 ? max_value * 1.08 : 1);
  const Scale y{ticks.front(), ticks.back(), f.bands.plot.bottom, f.bands.plot.top};
  std::string s = open_chart(id, f, title, page) + y_axis(f.bands.plot, y, ticks, y_title);
  const double bar_width = std::min(f.bands.slot_width() * 0.9, 72.0);
  for (size_t r = 0; r < page.cells.size(); ++r)
    for (size_t i = 0; i < page.cells[r].size(); ++i) {
      const auto value = page.cells[r][i].*metric;
      const double x = f.bands.slot_centre(r, i);
      if (!value) {
        s += absent_mark(page.cells[r][i], x, f.bands);
        continue;
      }
      s += fmt::format(R"(<rect class="mark" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}">)"
                       R"(<title>{} · {}: {} {}</title></rect>)",
                       x - bar_width / 2, y(*value), bar_width, y(0) - y(*value), colour(i),
                       escape_html(page.labels[i]), escape_html(page.rungs[r]), compact(*value), unit);
      if (bar_width >= 30)
        s += fmt::format(R"(<text class="value" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x,
                         y(*value) - 4, compact(*value));
    }
  return s + "</svg>";
}

std::string tokens_chart(const Page& page) {
  return grouped_bar_chart(page, "chart-tokens", "Throughput per rung (median tokens/s, higher is better)",
                           "tokens/s", &Cell::tokens_per_s, "tokens/s");
}
std::string memory_chart(const Page& page) {
  return grouped_bar_chart(page, "chart-memory", "Peak memory per rung (GiB, lower is better)", "peak memory (GiB)",
                           &Cell::peak_gib, "GiB");
}

// The ladder's shape: each input's speedup over its own fp32 rung, rung by rung.
std::string speedup_chart(const Page& page) {
  double max_value = 1;
  for (const auto& row : page.cells)
    for (const auto& c : row) max_value = std::max(max_value, c.speedup_vs_fp32.value_or(0));
  const Frame f = band_frame(page, 260);
  const auto ticks = nice_ticks(0, max_value * 1.08);
  const Scale y{ticks.front(), ticks.back(), f.bands.plot.bottom, f.bands.plot.top};
  std::string s = open_chart("chart-speedup", f, "Speedup over fp32 per rung (each input against its own fp32)", page) +
                  y_axis(f.bands.plot, y, ticks, "speedup over fp32 (x)");
  s += svg_line("reference", f.bands.plot.left, y(1), f.bands.plot.right, y(1));
  struct EndLabel { size_t rung; double x, y; std::string text; size_t input; };
  std::vector<EndLabel> end_labels;  // each series' last value, written beside its last point
  for (size_t i = 0; i < page.labels.size(); ++i) {
    const double dodge = (double(i) - double(page.labels.size() - 1) / 2) * 3;  // keeps equal points visible
    std::string points, dots;
    std::optional<EndLabel> last;
    auto flush = [&] {
      if (std::count(points.begin(), points.end(), ',') >= 2)
        s += fmt::format(R"(<polyline class="mark series" points="{}" stroke="{}"/>)", points, colour(i));
      points.clear();
    };
    for (size_t r = 0; r < page.cells.size(); ++r) {
      const auto v = i < page.cells[r].size() ? page.cells[r][i].speedup_vs_fp32 : std::nullopt;
      if (!v) { flush(); continue; }  // a gap in the line where a rung is missing
      const double x = f.bands.centre(r) + dodge;
      points += fmt::format("{:.1f},{:.1f} ", x, y(*v));
      last = EndLabel{r, x + 9, y(*v) + 4, fmt::format("{:.2f}\u00d7", *v), i};
      dots += fmt::format(R"(<circle class="mark" cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}">)"
                          R"(<title>{} · {}: {:.2f}x</title></circle>)",
                          x, y(*v), colour(i), escape_html(page.labels[i]), escape_html(page.rungs[r]), *v);
    }
    flush();
    s += dots;
    if (last) end_labels.push_back(*last);
  }
  std::sort(end_labels.begin(), end_labels.end(),
            [](const auto& a, const auto& b) { return std::pair(a.rung, a.y) < std::pair(b.rung, b.y); });
  for (size_t k = 1; k < end_labels.size(); ++k)  // labels at one rung keep 13 px apart
    if (end_labels[k].rung == end_labels[k - 1].rung)
      end_labels[k].y = std::max(end_labels[k].y, end_labels[k - 1].y + 13);
  for (const auto& l : end_labels) {
    const bool room_right = l.x + 48 < f.width;  // else write it on the left of the point
    s += fmt::format(R"(<text class="value end" x="{:.1f}" y="{:.1f}" text-anchor="{}" style="fill:{}">{}</text>)",
                     room_right ? l.x : l.x - 18, l.y, room_right ? "start" : "end", colour(l.input), l.text);
  }
  return s + "</svg>";
}

// Per-step dt of every rung and input as a deviation from that cell's median,
// so noise is comparable across rungs of very different speed: min-max
// whisker, p25-p75 box, median line and every sample (deterministic jitter).
std::string dt_chart(const Page& page) {
  double lo = -1, hi = 1;  // percent; at least +-1 % so a quiet run still has an axis
  for (const auto& row : page.cells)
    for (const auto& c : row) {
      std::vector<double> v = c.dt_ms_samples;
      std::sort(v.begin(), v.end());
      const double median = percentile(v, 0.5);
      if (v.empty() || median <= 0) continue;
      lo = std::min(lo, (v.front() / median - 1) * 100);
      hi = std::max(hi, (v.back() / median - 1) * 100);
    }
  const Frame f = band_frame(page, 300);
  const auto ticks = nice_ticks(lo, hi, 6);
  const Scale y{ticks.front(), ticks.back(), f.bands.plot.bottom, f.bands.plot.top};
  const char* title = "Per-step time spread (each step's dt relative to its median; medians in the tables)";
  std::string s = open_chart("chart-dt", f, title, page) +
                  y_axis(f.bands.plot, y, ticks, "dt vs median (%)");
  s += svg_line("reference", f.bands.plot.left, y(0), f.bands.plot.right, y(0));
  const double box_width = std::min(f.bands.slot_width() * 0.7, 44.0);
  for (size_t r = 0; r < page.cells.size(); ++r)
    for (size_t i = 0; i < page.cells[r].size(); ++i) {
      std::vector<double> v = page.cells[r][i].dt_ms_samples;
      std::sort(v.begin(), v.end());
      const double x = f.bands.slot_centre(r, i), median = percentile(v, 0.5);
      if (v.empty() || median <= 0) {
        s += absent_mark(page.cells[r][i], x, f.bands);
        continue;
      }
      auto pct = [&](double ms) { return y((ms / median - 1) * 100); };
      const double p25 = percentile(v, 0.25), p75 = percentile(v, 0.75);
      s += fmt::format("<g><title>{} · {}: median {:.2f} ms, p25–p75 {:.2f}–{:.2f} ms, min–max {:.2f}–{:.2f} ms, n={}</title>",
                       escape_html(page.labels[i]), escape_html(page.rungs[r]), median, p25, p75, v.front(), v.back(), v.size());
      const double cap = box_width / 4;
      s += svg_line("whisker", x, pct(v.front()), x, pct(v.back()), colour(i)) +
           svg_line("whisker", x - cap, pct(v.front()), x + cap, pct(v.front()), colour(i)) +
           svg_line("whisker", x - cap, pct(v.back()), x + cap, pct(v.back()), colour(i));
      s += fmt::format(R"(<rect class="mark box" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="{}"/>)",
                       x - box_width / 2, pct(p75), box_width, std::max(pct(p25) - pct(p75), 1.0), colour(i), colour(i));
      s += svg_line("median", x - box_width / 2, pct(median), x + box_width / 2, pct(median), colour(i));
      for (size_t k = 0; k < page.cells[r][i].dt_ms_samples.size(); ++k) {
        const double jitter = std::fmod(double(k) * 0.6180339887, 1.0) - 0.5;  // golden-ratio spread, reproducible
        s += fmt::format(R"(<circle class="mark sample" cx="{:.1f}" cy="{:.1f}" r="2.4" fill="{}"/>)",
                         x + jitter * box_width * 0.8, pct(page.cells[r][i].dt_ms_samples[k]), colour(i));
      }
      s += "</g>";
    }
  return s + "</svg>";
}

// Where each step's time went: per rung, one stacked bar per input of the
// op breakdown's categories in ms per step (GEMM at the base). Fusion shows
// as the elementwise/norm band shrinking from one rung to the next.
std::string breakdown_chart(const Page& page) {
  std::vector<std::string> labels, colours;
  for (const auto& cat : kCategories) {
    labels.push_back(cat.label);
    colours.push_back(cat.colour);
  }
  double max_total = 0;
  for (const auto& row : page.cells)
    for (const auto& c : row) {
      double total = 0;
      for (const auto& [key, ms] : c.breakdown_ms) total += std::max(ms, 0.0);
      max_total = std::max(max_total, total);
    }
  const Frame f = band_frame(page, 300, labels);
  const auto ticks = nice_ticks(0, max_total > 0 ? max_total * 1.08 : 1);
  const Scale y{ticks.front(), ticks.back(), f.bands.plot.bottom, f.bands.plot.top};
  std::string s = open_chart("chart-breakdown", f,
                             "Where a step's time goes (op breakdown, ms per step; inputs left to right in each rung)",
                             page, labels, colours) +
                  y_axis(f.bands.plot, y, ticks, "ms per step");
  const double bar_width = std::min(f.bands.slot_width() * 0.9, 72.0);
  for (size_t r = 0; r < page.cells.size(); ++r)
    for (size_t i = 0; i < page.cells[r].size(); ++i) {
      const Cell& c = page.cells[r][i];
      const double x = f.bands.slot_centre(r, i);
      if (c.breakdown_ms.empty()) {
        s += absent_mark(c, x, f.bands);
        continue;
      }
      double base = 0;
      for (const auto& [key, ms] : c.breakdown_ms) {
        if (!(ms > 0)) continue;
        const Category* cat = nullptr;
        for (const auto& k : kCategories)
          if (key == k.key) cat = &k;
        s += fmt::format(R"(<rect class="mark segment" data-category="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" )"
                         R"(height="{:.1f}" fill="{}"><title>{} · {} · {}: {} ms per step</title></rect>)",
                         cat->key, x - bar_width / 2, y(base + ms), bar_width, y(base) - y(base + ms), cat->colour,
                         escape_html(page.labels[i]), escape_html(page.rungs[r]), cat->label, compact(ms));
        base += ms;
      }
      if (f.bands.slot_width() >= 14)
        s += fmt::format(R"(<text class="value" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x, y(base) - 4,
                         escape_html(shorten(page.labels[i], 4)));
    }
  return s + "</svg>";
}

// ---- the HTML sections ------------------------------------------------------------------
std::string swatch(size_t input) { return fmt::format(R"(<span class="swatch" style="background:{}"></span>)", colour(input)); }

// What makes up each band of the breakdown chart: per rung (collapsed), the
// largest kernels (CUDA) or operators (CPU) of each category and input.
std::string breakdown_names(const Page& page) {
  constexpr size_t kRows = 5;  // per category and input
  std::string body;
  for (size_t r = 0; r < page.cells.size(); ++r) {
    std::string rows;
    for (const auto& cat : kCategories)
      for (size_t i = 0; i < page.cells[r].size(); ++i) {
        const json& top = array_at(page.cells[r][i].breakdown_top, cat.key);
        for (size_t k = 0; k < top.size() && k < kRows; ++k)
          rows += fmt::format(
              R"(<tr data-category="{}"><td><span class="swatch" style="background:{}"></span>{}</td><td>{}{}</td>)"
              R"(<td><code>{}</code></td><td>{}</td><td>{}</td></tr>)",
              cat.key, cat.colour, cat.label, swatch(i), escape_html(page.labels[i]), escape_html(text(top[k], "name")),
              fixed(number(top[k], "ms"), 3), fixed(number(top[k], "calls"), 1));
      }
    if (rows.empty()) continue;
    body += "<details class=\"breakdown-top\"><summary>" + escape_html(page.rungs[r]) +
            "</summary><table class=\"breakdown-top\"><tr><th>category</th><th>input</th><th>kernel or operator</th>"
            "<th>ms per step</th><th>calls per step</th></tr>" + rows + "</table></details>";
  }
  if (body.empty()) return "";
  return "<h3>What makes up each band</h3><p class=\"note\">The largest kernels (CUDA, own time) or operators (CPU, "
         "self time) of each category, per rung and input, from the first process's op breakdown.</p>" + body;
}

// "<tr><th>first</th><th>■ A</th><th>■ B</th></tr>"
std::string input_header_row(const char* first, const Page& page) {
  std::string s = std::string("<tr><th>") + first + "</th>";
  for (size_t i = 0; i < page.labels.size(); ++i) s += "<th>" + swatch(i) + escape_html(page.labels[i]) + "</th>";
  return s + "</tr>";
}

std::string header_section(const json& cmp, const Page& page) {
  const json& subject = member(cmp, "subject").is_object() ? member(cmp, "subject") : json::object();
  std::string what;
  for (const auto& [key, values] : subject.items()) what += (what.empty() ? "" : ", ") + key;
  std::string s = "<header><h1>ladder compare</h1><p class=\"subject-line\">" +
                  (what.empty() ? std::string("Same environment in every input: a repeat run (differences are noise or drift).")
                                : "Comparing <strong>" + escape_html(what) + "</strong>") + "</p>";
  s += "<table class=\"inputs\"><tr><th>input</th><th>path</th><th>run id</th><th>device</th>"
       "<th>geomean tokens/s vs " + escape_html(page.labels.empty() ? "" : page.labels[0]) + "</th></tr>";
  const json& inputs = array_at(cmp, "inputs");
  const json& geomean = array_at(cmp, "geomean");
  for (size_t i = 0; i < inputs.size(); ++i) {
    const json g = i < geomean.size() ? geomean[i] : json();
    s += fmt::format("<tr><td>{}{}</td><td><code>{}</code></td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>", swatch(i),
                     escape_html(page.labels[i]), escape_html(text(inputs[i], "path")), escape_html(text(inputs[i], "run_id")),
                     escape_html(text(inputs[i], "device")),
                     i == 0 ? "baseline" : fixed(number(g, "ratio_tokens_per_s"), 2, "\u00d7"));
  }
  s += "</table>";
  if (!subject.empty()) {
    s += "<h2>What differs</h2><table class=\"subject\">" + input_header_row("environment key", page);
    for (const auto& [key, values] : subject.items()) {
      s += "<tr><td><code>" + escape_html(key) + "</code></td>";
      for (size_t i = 0; i < page.labels.size(); ++i)
        s += "<td>" + escape_html(values.is_array() && i < values.size() ? value_text(values[i]) : kDash) + "</td>";
      s += "</tr>";
    }
    s += "</table>";
  }
  auto notes = [&](const char* key, const char* css, const char* heading) {
    const json& items = array_at(cmp, key);
    if (items.empty()) return;
    s += fmt::format("<div class=\"{}\"><strong>{}</strong><ul>", css, heading);
    for (const auto& item : items) s += "<li>" + escape_html(value_text(item)) + "</li>";
    s += "</ul></div>";
  };
  notes("forced_differences", "forced", "Compared with --force although the inputs measured different things:");
  notes("warnings", "warnings", "Warnings:");
  return s + "</header>";
}

std::string verdict_class(const std::string& verdict) {
  if (verdict == "faster") return "v-faster";
  if (verdict == "slower") return "v-slower";
  if (verdict == "within noise") return "v-same";
  if (verdict == "too few samples") return "v-few";
  return "v-missing";
}

std::string rung_tables(const json& cmp, const Page& page) {
  const double alpha = number(cmp, "alpha").value_or(0.05);
  const std::string base = escape_html(page.labels.empty() ? "" : page.labels[0]);
  std::string s = fmt::format("<h2>Rungs</h2><p class=\"note\">Verdict: Mann–Whitney U test on the per-step dt of each "
                              "input against {}, at α = {}.</p>", base, alpha);
  bool any_peer = false;
  for (const auto& rung : array_at(cmp, "rungs")) any_peer = any_peer || member(rung, "peer") == json(true);
  if (any_peer)
    s += "<p class=\"note peers-note\">Tables captioned <code>peer:&lt;name&gt;</code> are PyTorch peers "
         "(<code>scripts/peer.py</code>: eager, or <code>torch.compile</code>) with the top single-process rung's "
         "switches, measured in the same run; they are not rungs and take no part in loss parity or the geomean.</p>";
  s += "<div class=\"rungs\">";
  const json& rungs = array_at(cmp, "rungs");
  for (size_t r = 0; r < page.rungs.size(); ++r) {
    const json& vs = array_at(rungs[r], "vs_baseline");
    const bool peer = member(rungs[r], "peer") == json(true);
    s += std::string(peer ? "<table class=\"rung peer\">" : "<table class=\"rung\">") + "<caption>" +
         escape_html(page.rungs[r]) + "</caption><tr><th>input</th><th>status</th>"
         "<th>median dt (ms)</th><th>tokens/s</th><th>MFU (%)</th><th>peak (GiB)</th><th>vs fp32</th>"
         "<th>tokens/s vs " + base + "</th><th>p-value</th><th>verdict</th></tr>";
    for (size_t i = 0; i < page.labels.size(); ++i) {
      const Cell& c = page.cells[r][i];
      const json v = i < vs.size() && vs[i].is_object() ? vs[i] : json();
      const std::string verdict = i == 0 ? "baseline" : text(v, "verdict", "missing");
      const auto p = number(v, "p_value");
      s += fmt::format("<tr><td>{}{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                       "<td>{}</td><td{}>{}</td><td><span class=\"verdict {}\">{}</span></td></tr>",
                       swatch(i), escape_html(page.labels[i]), c.status == "ok" ? "ok" : "status-bad", escape_html(c.status),
                       fixed(c.dt_ms, 1), c.tokens_per_s ? compact(*c.tokens_per_s) : kDash, fixed(c.mfu_pct, 1),
                       fixed(c.peak_gib, 2), fixed(c.speedup_vs_fp32, 2, "\u00d7"),
                       i == 0 ? "" : fixed(number(v, "ratio_tokens_per_s"), 3, "\u00d7"),
                       p && *p < alpha ? " class=\"significant\"" : "", p_value_text(p),
                       i == 0 ? "v-base" : verdict_class(verdict), escape_html(verdict));
    }
    s += "</table>";
  }
  return s + "</div>";
}

std::string environment_table(const json& cmp, const Page& page) {
  const json& inputs = array_at(cmp, "inputs");
  std::vector<std::string> keys;
  for (const auto& in : inputs) {
    const json& env = member(in, "environment");
    if (env.is_object())
      for (const auto& [k, v] : env.items())
        if (std::find(keys.begin(), keys.end(), k) == keys.end()) keys.push_back(k);
  }
  std::sort(keys.begin(), keys.end());
  std::string s = "<h2>Environment</h2><table class=\"environment\">" + input_header_row("key", page);
  for (const auto& k : keys) {
    std::vector<json> values;
    for (const auto& in : inputs) values.push_back(member(member(in, "environment"), k.c_str()));
    const bool differs = std::any_of(values.begin(), values.end(), [&](const json& v) { return v != values.front(); });
    s += std::string(differs ? "<tr class=\"differs\">" : "<tr>") + "<td><code>" + escape_html(k) + "</code></td>";
    for (const auto& v : values) s += "<td>" + escape_html(value_text(v)) + "</td>";
    s += "</tr>";
  }
  return s + "</table>";
}

constexpr const char* kStyle = R"(<style>
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;background:#f6f8fa;margin:0}
main{max-width:1160px;margin:0 auto;padding:24px 28px;background:#fff;box-shadow:0 0 0 1px #d0d7de}
h1{font-size:26px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
.subject-line{font-size:16px;margin:0 0 12px}.note{color:#57606a;margin:4px 0 10px}
table{border-collapse:collapse;margin:6px 0 12px}th,td{padding:4px 10px;border-bottom:1px solid #eaeef2;text-align:left}
th{background:#f6f8fa;font-weight:600;font-size:13px}td{font-variant-numeric:tabular-nums}
code{font:12.5px ui-monospace,SFMono-Regular,Menlo,monospace}
.swatch{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:6px;vertical-align:-1px}
.forced{background:#ffebe9;border:1px solid #ff8182;border-radius:6px;padding:8px 14px;margin:10px 0}
.warnings{background:#fff8c5;border:1px solid #d4a72c;border-radius:6px;padding:8px 14px;margin:10px 0}
.forced ul,.warnings ul{margin:4px 0 0;padding-left:20px}
.rungs{display:grid;grid-template-columns:1fr;gap:6px}table.rung{width:100%;table-layout:fixed}
table.rung th:nth-child(1){width:15%}table.rung th:nth-child(3),table.rung th:nth-child(8){width:12%}
table.rung th:nth-child(4){width:8%}table.rung th:nth-child(6){width:9%}table.rung th:nth-child(10){width:16%}
table.rung th:nth-child(2),table.rung th:nth-child(5),table.rung th:nth-child(7),table.rung th:nth-child(9){width:7%}
table.rung td{overflow-wrap:anywhere}
table.rung caption{text-align:left;font-weight:600;font-size:15px;padding:6px 0 2px}
table.rung.peer caption{color:#8250df}
table.rung td:nth-child(n+3),table.rung th:nth-child(n+3){text-align:right}
.status-bad{color:#cf222e;font-weight:600}.significant{font-weight:700}
.verdict{padding:1px 8px;border-radius:10px;font-size:12.5px;white-space:nowrap}
.v-faster{background:#dafbe1;color:#116329}.v-slower{background:#ffebe9;color:#a40e26}
.v-same{background:#eaeef2;color:#424a53}.v-few{background:#fff8c5;color:#7d4e00}
.v-missing{background:#f6f8fa;color:#8c959f;border:1px dashed #afb8c1}.v-base{color:#57606a}
tr.differs td{background:#fff8c5}tr.differs td:first-child{box-shadow:inset 3px 0 #d4a72c}
svg.chart{display:block;max-width:100%;height:auto;margin:8px 0 20px;font-family:system-ui,sans-serif}
svg .chart-title{font-size:15px;font-weight:600;fill:#1f2328}svg .tick,svg .band,svg .legend{font-size:12px;fill:#424a53}
svg .axis-title{font-size:12px;fill:#57606a}svg .value{font-size:10.5px;fill:#424a53}svg .na{font-size:12px;fill:#8c959f}
svg .grid{stroke:#eaeef2}svg .axis{stroke:#8c959f}svg .reference{stroke:#8c959f;stroke-dasharray:5 4}
svg .series{fill:none;stroke-width:2.5}svg .box{fill-opacity:.22}svg .median{stroke-width:2.5}
svg .whisker{stroke-width:1.3}svg .sample{fill-opacity:.6}svg .end{font-size:12px;font-weight:600}
details.breakdown-top{margin:2px 0}details.breakdown-top summary{cursor:pointer;font-weight:600}
table.breakdown-top td:nth-child(n+4),table.breakdown-top th:nth-child(n+4){text-align:right}
table.breakdown-top code{overflow-wrap:anywhere}h3{font-size:15px;margin:12px 0 4px}
#render-check{display:none}footer{color:#8c959f;font-size:12px;margin-top:24px}
</style>)";

// Records each chart's rendered size and mark counts; tests/check_html.py reads them from the DOM.
constexpr const char* kRenderCheckScript = R"(<script>
window.addEventListener('load', function () {
  var lines = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var box = svg.getBoundingClientRect();
    var size = Math.round(box.width) + 'x' + Math.round(box.height);
    svg.setAttribute('data-rendered', size);
    lines.push(svg.id + ' ' + size + ' marks=' + svg.querySelectorAll('.mark').length);
  });
  document.getElementById('render-check').textContent = lines.join('\n');
});
</script>)";

}  // namespace

std::string render_comparison_html(const json& comparison) {
  const Page page = read_page(comparison);
  std::string title = "ladder compare";
  for (size_t i = 0; i < page.labels.size(); ++i) title += (i == 0 ? ": " : " vs ") + page.labels[i];
  return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape_html(title) + "</title>" +
         kStyle + "</head><body><main>" + header_section(comparison, page) + "<h2>Charts</h2>" + tokens_chart(page) +
         speedup_chart(page) + memory_chart(page) + dt_chart(page) + breakdown_chart(page) + breakdown_names(page) +
         rung_tables(comparison, page) +
         environment_table(comparison, page) +
         fmt::format("<footer>ladder comparison · schema version {} · metric {}</footer>",
                     escape_html(value_text(member(comparison, "schema_version"))),
                     escape_html(text(comparison, "metric"))) +
         "<pre id=\"render-check\"></pre>" + kRenderCheckScript + "</main></body></html>\n";
}

}  // namespace ladder
