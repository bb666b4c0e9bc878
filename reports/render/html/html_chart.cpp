// reports/render/html/html_chart.cpp: see html_chart.h. Every kind of chart shares one
// frame (title, legend, bands of categories along x, a y axis): Scale,
// nice_ticks, y_axis, Bands/x_band_labels, legend; then one function draws
// each kind's marks.
#include "reports/render/html/html_chart.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "reports/render/html_escape.h"
#include "reports/stats/stats.h"

namespace ladder {
namespace {

constexpr double kChartWidthPx = 1100;
constexpr double kCharWidthPx = 7.0;  // average glyph width of 12 px sans-serif
constexpr const char* kDash = "\u2013";
constexpr const char* kInk = "#24292f";  // whiskers over bars of the series' colour

// ---- number formatting ------------------------------------------------------------
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
// "16.4k tokens/s", "3.64×": a word follows after a space, a symbol without one.
std::string with_unit(double v, const std::string& unit) {
  const bool word = !unit.empty() && std::isalpha(static_cast<unsigned char>(unit[0]));
  return compact(v) + (word ? " " : "") + unit;
}
// Tick labels show just the digits their spacing needs: 20k, 0.5, 2.5.
std::string tick_label(double v, double step) {
  if (std::fabs(v) < step * 1e-6) return "0";
  const auto [scale, suffix] = si_multiple(step);
  const int decimals = std::max(0, int(std::ceil(-std::log10(step / scale) - 1e-9)));
  return fmt::format("{:.{}f}{}", v / scale, decimals, suffix);
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

std::string svg_line(const char* css_class, double x1, double y1, double x2, double y2,
                     const std::string& stroke = "") {
  return fmt::format(R"(<line class="{}" x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}"{}/>)", css_class, x1, y1, x2,
                     y2, stroke.empty() ? "" : fmt::format(" stroke=\"{}\"", escape_html(stroke)));
}

// A vertical whisker from y1 to y2 with caps `cap` px either side.
std::string whisker(const char* css_class, double x, double y1, double y2, double cap, const std::string& stroke) {
  return svg_line(css_class, x, y1, x, y2, stroke) + svg_line(css_class, x - cap, y1, x + cap, y1, stroke) +
         svg_line(css_class, x - cap, y2, x + cap, y2, stroke);
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

// One band per category along x, one slot per series inside each band.
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
// Height below the plot that the category labels need (rotated 35° when they do not fit).
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
                           R"~(transform="rotate(-35 {0:.1f} {1:.1f})">)~",
                           x, y);
    s += fmt::format("<title>{0}</title>{1}</text>", escape_html(names[b]),
                     escape_html(shorten(names[b], kMaxLabelChars)));
  }
  return s;
}

// Legend entries (swatch + label) laid out in rows that wrap at max_width.
struct LegendEntry {
  std::string label, colour;
};
struct LegendSlot {
  double x, y;
};
std::vector<LegendSlot> legend_layout(const std::vector<LegendEntry>& entries, double left, double top,
                                      double max_width) {
  std::vector<LegendSlot> slots;
  double x = left, y = top;
  for (const auto& e : entries) {
    const double w = 22 + double(std::min(e.label.size(), kMaxLabelChars)) * kCharWidthPx + 18;
    if (x > left && x + w > left + max_width) x = left, y += 20;
    slots.push_back({x, y});
    x += w;
  }
  return slots;
}
std::string legend(const std::vector<LegendEntry>& entries, const std::vector<LegendSlot>& slots) {
  std::string s;
  for (size_t i = 0; i < entries.size(); ++i)
    s += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="14" height="14" rx="2" fill="{}"/>)"
                     R"(<text class="legend" x="{:.1f}" y="{:.1f}">{}</text>)",
                     slots[i].x, slots[i].y, escape_html(entries[i].colour), slots[i].x + 20, slots[i].y + 11,
                     escape_html(shorten(entries[i].label, kMaxLabelChars)));
  return s;
}
// A stacked chart's legend is its layers; any other's, its series.
std::vector<LegendEntry> legend_entries(const Chart& c) {
  std::vector<LegendEntry> entries;
  if (c.kind == ChartKind::kStacked)
    for (const auto& l : c.layers) entries.push_back({l.label, l.colour});
  else
    for (size_t i = 0; i < c.series.size(); ++i) entries.push_back({c.series[i].name, series_colour(i)});
  return entries;
}

// An SVG with a title, a legend and a band plot below them, and its y scale.
struct Frame {
  double width, height;
  Bands bands;
  Scale y;
  std::vector<double> ticks;
};

// The y range the chart's data and y_covers span; 8 % headroom above, but for
// a spread (its samples set its axis).
std::pair<double, double> y_range(const Chart& c) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  const auto cover = [&](double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  };
  for (double v : c.y_covers) cover(v);
  if (c.reference) cover(*c.reference);
  for (const auto& series : c.series)
    for (const auto& p : series.points) {
      if (p.value) cover(*p.value);
      if (p.interval) cover(p.interval->lo), cover(p.interval->hi);
      for (double v : p.samples) cover(v);
      double total = 0;
      for (double v : p.stack) total += std::max(v, 0.0);
      cover(total);
    }
  if (!(lo <= hi)) lo = 0, hi = 1;  // nothing finite to cover
  if (c.kind != ChartKind::kSpread) hi += (hi - lo) * 0.08;
  return {lo, hi};
}

// The frame, and the open <svg> with its title, legend and category labels.
std::string open_chart(const Chart& c, Frame& f) {
  const bool tall = c.kind == ChartKind::kSpread || c.kind == ChartKind::kStacked;
  const double left = 84, right = 16, plot_height = tall ? 300 : 260;
  const auto entries = legend_entries(c);
  const auto slots = legend_layout(entries, left, 34, kChartWidthPx - left - right);
  const double top = (slots.empty() ? 34 : slots.back().y + 14) + 18;
  const double band_width = (kChartWidthPx - left - right) / double(std::max<size_t>(c.categories.size(), 1));
  const Box plot{left, top, kChartWidthPx - right, top + plot_height};
  const auto [lo, hi] = y_range(c);
  f = {kChartWidthPx,
       plot.bottom + x_labels_height(c.categories, band_width) + 8,
       {plot, c.categories.size(), c.series.size()},
       {},
       nice_ticks(lo, hi, c.kind == ChartKind::kSpread ? 6 : 5)};
  f.y = {f.ticks.front(), f.ticks.back(), plot.bottom, plot.top};
  return fmt::format(
             R"(<svg class="chart" id="{0}" xmlns="http://www.w3.org/2000/svg" width="{1:.0f}" height="{2:.0f}" )"
             R"(viewBox="0 0 {1:.0f} {2:.0f}" role="img" aria-label="{3}"><title>{3}</title>)"
             R"(<text class="chart-title" x="{4:.1f}" y="20">{3}</text>)",
             escape_html(c.id), f.width, f.height, escape_html(c.title), plot.left) +
         legend(entries, slots) + x_band_labels(f.bands, c.categories) + y_axis(plot, f.y, f.ticks, c.y_title);
}

// ---- the marks of each kind -------------------------------------------------------------
// In place of a value: the point's status ("missing", "failed") written
// upwards from the baseline, or a dash when it has none.
std::string absent_mark(const ChartPoint& p, double x, const Bands& bands) {
  if (p.status.empty() || p.status == "ok" || bands.slot_width() < 14)
    return fmt::format(R"(<text class="na" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x,
                       bands.plot.bottom - 5, kDash);
  return fmt::format(R"~(<text class="na" x="{0:.1f}" y="{1:.1f}" transform="rotate(-90 {0:.1f} {1:.1f})">{2}</text>)~",
                     x + 4, bands.plot.bottom - 6, escape_html(shorten(p.status, 16)));
}

// "A · fp32": whose point it is, for a hover title.
std::string whose(const Chart& c, size_t series, size_t category) {
  return escape_html(c.series[series].name) + " \u00b7 " + escape_html(c.categories[category]);
}
// What a hover title says of a point: its text (or value and unit), and its interval.
std::string point_text(const Chart& c, const ChartPoint& p) {
  std::string s = !p.hover.empty() ? p.hover : p.value ? with_unit(*p.value, c.unit) : kDash;
  if (p.interval)
    s += fmt::format(" (interval {}\u2013{})", compact(p.interval->lo), with_unit(p.interval->hi, c.unit));
  return escape_html(s);
}

const ChartPoint& point_at(const Chart& c, size_t series, size_t category) {
  static const ChartPoint kNone;
  const auto& points = c.series[series].points;
  return category < points.size() ? points[category] : kNone;
}

// The charts drawn by slots (bars, spreads, stacks): for each category r and
// series i, `mark` of its point at the slot's centre x, or the absent mark
// where `drawn` says the point has nothing to draw.
template <class Drawn, class Mark>
std::string slot_marks(const Chart& c, const Frame& f, Drawn drawn, Mark mark) {
  std::string s;
  for (size_t r = 0; r < c.categories.size(); ++r)
    for (size_t i = 0; i < c.series.size(); ++i) {
      const ChartPoint& p = point_at(c, i, r);
      const double x = f.bands.slot_centre(r, i);
      s += drawn(p) ? mark(i, r, p, x) : absent_mark(p, x, f.bands);
    }
  return s;
}

// A bar's width in a slot (bars and stacks).
double bar_width(const Frame& f) { return std::min(f.bands.slot_width() * 0.9, 72.0); }

// One bar: its value, its interval's whisker, and the value above it where it fits.
std::string bar_mark(const Chart& c, const Frame& f, size_t i, size_t r, const ChartPoint& p, double x) {
  const double v = *p.value, width = bar_width(f);
  std::string s = fmt::format(R"(<rect class="mark" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}">)"
                              R"(<title>{}: {}</title></rect>)",
                              x - width / 2, std::min(f.y(v), f.y(0)), width, std::fabs(f.y(0) - f.y(v)),
                              series_colour(i), whose(c, i, r), point_text(c, p));
  double label_top = v;
  if (p.interval) {
    s += whisker("whisker interval", x, f.y(p.interval->lo), f.y(p.interval->hi), width / 5, kInk);
    label_top = std::max(v, p.interval->hi);
  }
  if (width >= 30)
    s += fmt::format(R"(<text class="value" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x,
                     f.y(label_top) - 4, compact(v));
  return s;
}

// Grouped bars: one group per category, one bar per series.
std::string bar_marks(const Chart& c, const Frame& f) {
  return slot_marks(
      c, f, [](const ChartPoint& p) { return p.value.has_value(); },
      [&](size_t i, size_t r, const ChartPoint& p, double x) { return bar_mark(c, f, i, r, p, x); });
}

// Each series' last value, written beside its last point; labels at one
// category keep 13 px apart, and go left of the point near the right edge.
struct EndLabel {
  size_t category;
  double x, y;
  std::string text;
  size_t series;
};
std::string end_labels(std::vector<EndLabel> labels, double width) {
  std::sort(labels.begin(), labels.end(),
            [](const auto& a, const auto& b) { return std::pair(a.category, a.y) < std::pair(b.category, b.y); });
  for (size_t k = 1; k < labels.size(); ++k)
    if (labels[k].category == labels[k - 1].category) labels[k].y = std::max(labels[k].y, labels[k - 1].y + 13);
  std::string s;
  for (const auto& l : labels) {
    const bool room_right = l.x + 48 < width;
    s += fmt::format(R"(<text class="value end" x="{:.1f}" y="{:.1f}" text-anchor="{}" style="fill:{}">{}</text>)",
                     room_right ? l.x : l.x - 18, l.y, room_right ? "start" : "end", series_colour(l.series),
                     escape_html(l.text));
  }
  return s;
}

// One line per series across the categories, broken where a value is absent.
std::string line_marks(const Chart& c, const Frame& f) {
  std::string s;
  if (c.reference)
    s += svg_line("reference", f.bands.plot.left, f.y(*c.reference), f.bands.plot.right, f.y(*c.reference));
  std::vector<EndLabel> ends;
  for (size_t i = 0; i < c.series.size(); ++i) {
    const double dodge = (double(i) - double(c.series.size() - 1) / 2) * 3;  // keeps equal points visible
    std::string points, dots;
    std::optional<EndLabel> last;
    auto flush = [&] {
      if (std::count(points.begin(), points.end(), ',') >= 2)
        s += fmt::format(R"(<polyline class="mark series" points="{}" stroke="{}"/>)", points, series_colour(i));
      points.clear();
    };
    for (size_t r = 0; r < c.categories.size(); ++r) {
      const ChartPoint& p = point_at(c, i, r);
      if (!p.value) {  // a gap in the line
        flush();
        continue;
      }
      const double x = f.bands.centre(r) + dodge, y = f.y(*p.value);
      points += fmt::format("{:.1f},{:.1f} ", x, y);
      last = EndLabel{r, x + 9, y + 4, with_unit(*p.value, c.unit), i};
      if (p.interval)
        dots += whisker("whisker interval", x, f.y(p.interval->lo), f.y(p.interval->hi), 4, series_colour(i));
      dots += fmt::format(
          R"(<circle class="mark" cx="{:.1f}" cy="{:.1f}" r="4.5" fill="{}"><title>{}: {}</title></circle>)", x, y,
          series_colour(i), whose(c, i, r), point_text(c, p));
    }
    flush();
    s += dots;
    if (last) ends.push_back(*last);
  }
  return s + end_labels(std::move(ends), f.width);
}

// One point's spread: min-max whisker, p25-p75 box, median line and every
// sample (with a deterministic jitter).
std::string spread_mark(const Chart& c, const Frame& f, size_t i, size_t r, const ChartPoint& p, double x) {
  std::vector<double> v = p.samples;
  std::sort(v.begin(), v.end());
  const double median = percentile(v, 0.5), p25 = percentile(v, 0.25), p75 = percentile(v, 0.75);
  const double box_width = std::min(f.bands.slot_width() * 0.7, 44.0);
  const std::string hover =
      !p.hover.empty() ? escape_html(p.hover)
                       : escape_html(fmt::format("median {}, p25\u2013p75 {}\u2013{}, min\u2013max {}\u2013{}, n={}",
                                                 with_unit(median, c.unit), compact(p25), with_unit(p75, c.unit),
                                                 compact(v.front()), with_unit(v.back(), c.unit), v.size()));
  std::string s = fmt::format("<g><title>{}: {}</title>", whose(c, i, r), hover);
  s += whisker("whisker", x, f.y(v.front()), f.y(v.back()), box_width / 4, series_colour(i));
  s += fmt::format(
      R"(<rect class="mark box" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}" stroke="{}"/>)",
      x - box_width / 2, f.y(p75), box_width, std::max(f.y(p25) - f.y(p75), 1.0), series_colour(i), series_colour(i));
  s += svg_line("median", x - box_width / 2, f.y(median), x + box_width / 2, f.y(median), series_colour(i));
  for (size_t k = 0; k < p.samples.size(); ++k) {
    const double jitter = std::fmod(double(k) * 0.6180339887, 1.0) - 0.5;  // golden-ratio spread, reproducible
    s += fmt::format(R"(<circle class="mark sample" cx="{:.1f}" cy="{:.1f}" r="2.4" fill="{}"/>)",
                     x + jitter * box_width * 0.8, f.y(p.samples[k]), series_colour(i));
  }
  return s + "</g>";
}

std::string spread_marks(const Chart& c, const Frame& f) {
  std::string s;
  if (c.reference)
    s += svg_line("reference", f.bands.plot.left, f.y(*c.reference), f.bands.plot.right, f.y(*c.reference));
  return s + slot_marks(
                 c, f, [](const ChartPoint& p) { return !p.samples.empty(); },
                 [&](size_t i, size_t r, const ChartPoint& p, double x) { return spread_mark(c, f, i, r, p, x); });
}

// One stacked bar: its layers bottom first, the series' name above where it fits.
std::string stacked_mark(const Chart& c, const Frame& f, size_t i, size_t r, const ChartPoint& p, double x) {
  const double width = bar_width(f);
  std::string s;
  double base = 0;
  for (size_t k = 0; k < p.stack.size() && k < c.layers.size(); ++k) {
    const double v = p.stack[k];
    if (!(v > 0)) continue;
    const ChartLayer& layer = c.layers[k];
    s += fmt::format(R"(<rect class="mark segment" data-category="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" )"
                     R"(height="{:.1f}" fill="{}"><title>{} · {}: {}</title></rect>)",
                     escape_html(layer.key), x - width / 2, f.y(base + v), width, f.y(base) - f.y(base + v),
                     escape_html(layer.colour), whose(c, i, r), escape_html(layer.label),
                     escape_html(with_unit(v, c.unit)));
    base += v;
  }
  if (f.bands.slot_width() >= 14)
    s += fmt::format(R"(<text class="value" x="{:.1f}" y="{:.1f}" text-anchor="middle">{}</text>)", x, f.y(base) - 4,
                     escape_html(shorten(c.series[i].name, 4)));
  return s;
}

// Per category, one bar per series stacked from the layers, bottom first.
std::string stacked_marks(const Chart& c, const Frame& f) {
  return slot_marks(
      c, f, [](const ChartPoint& p) { return p.has_data(); },
      [&](size_t i, size_t r, const ChartPoint& p, double x) { return stacked_mark(c, f, i, r, p, x); });
}

// A chart without data: its title and its note, no axes.
std::string empty_chart(const Chart& c) {
  return fmt::format(R"(<svg class="chart empty" id="{0}" xmlns="http://www.w3.org/2000/svg" width="{1:.0f}" )"
                     R"(height="56" viewBox="0 0 {1:.0f} 56" role="img" aria-label="{2}"><title>{2}</title>)"
                     R"(<text class="chart-title" x="84" y="20">{2}</text>)"
                     R"(<text class="empty-note" x="84" y="44">{3}</text></svg>)",
                     escape_html(c.id), kChartWidthPx, escape_html(c.title),
                     escape_html(c.empty_note.empty() ? std::string("no data") : c.empty_note));
}

}  // namespace

std::string chart_svg(const Chart& c) {
  if (!c.has_data()) return empty_chart(c);
  Frame f{};
  std::string s = open_chart(c, f);
  switch (c.kind) {
    case ChartKind::kBars: s += bar_marks(c, f); break;
    case ChartKind::kLines: s += line_marks(c, f); break;
    case ChartKind::kSpread: s += spread_marks(c, f); break;
    case ChartKind::kStacked: s += stacked_marks(c, f); break;
  }
  return s + "</svg>";
}

}  // namespace ladder
