// reports/stats/block_design.h: intervals of ratios between the cells of one run,
// from all its processes at once, after the processes that something else on
// the machine slowed down have been found and left out.
//
// `ladder run --repeat N` runs every cell once per round, the rounds one after
// another: a randomized complete block design, with rounds as blocks. The log
// of each process's value (its median tokens/s, say) is modelled as
//     log y[cell, round] = cell effect + round effect + noise,
// fitted by least squares. The round effect absorbs what drifts between
// rounds (the machine warming up, a neighbour arriving); the noise's variance
// is pooled over every cell, so two rounds of nine rungs already give eight
// degrees of freedom, where a pair of cells alone would give one. The design
// may be unbalanced (cells with more rounds than others, `--repeat auto`):
// the covariance of the effects is sigma^2 (X'X)^+, solved with LibTorch's
// linear algebra.
//
// The test of cells. Pooling assumes one noise level across cells, and a
// single process slowed by a neighbour (3.7x, for a few minutes) breaks it:
// its residual would widen every pair's interval and set its own pair's
// point. So, before pooling, each process is tested against what its cell
// and round predict from the other processes: its externally studentized
// residual (the residual of a fit without it, over that fit's noise; Student's
// t with df - 1 degrees of freedom). A machine's disturbances only ever slow a
// process, so the test is one-sided. A process is *disturbed* when it is
// slower than predicted by at least kDisturbedMinSlowdown and its p-value,
// Bonferroni-adjusted over the processes tested, is below kDisturbedAlpha.
// The most significant one leaves the fit, and the test repeats on the rest,
// until none is found or no degree of freedom is left to test with. A design
// with too few degrees of freedom (two cells in two rounds) tests nothing.
//
// The estimate. A ratio of two cells is the median of their per-round ratios
// over the rounds where neither was disturbed (inference.h median_ratio: one
// disturbed round of three cannot move it); its interval is exp(effect b -
// effect a) +- Student's t times its standard error, from the fit over the
// processes not left out. A pair of clean cells keeps an interval from clean
// data; a pair with a disturbed side has fewer processes, hence a wider
// interval, and says so (`left_out`).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reports/stats/inference.h"

namespace ladder {

// The test of cells' thresholds (above).
inline constexpr double kDisturbedAlpha = 0.01;
inline constexpr double kDisturbedMinSlowdown = 1.05;

// A process the test of cells left out.
struct DisturbedProcess {
  std::string cell;
  int round = 0;
  double value = 0;      // as added
  double slower_x = 1;   // how many times slower it ran than its cell and round predict from the other processes
  double p_value = 1;    // one-sided, Bonferroni-adjusted over the processes tested
};

class BlockDesign {
 public:
  // One process's value (> 0, larger is faster: tokens/s) of `cell` in `round`.
  void add(const std::string& cell, int round, double value);
  // value(b) over value(a), with its interval; no interval when the design
  // leaves no degree of freedom for the noise (one round, say) or does not
  // connect the two cells. Fits the model at the first call after add().
  RatioInterval ratio(const std::string& a, const std::string& b, double confidence = 0.95) const;
  // The processes the test of cells left out, in the order it found them.
  const std::vector<DisturbedProcess>& disturbed() const;
  bool is_disturbed(const std::string& cell, int round) const;
  // The residual degrees of freedom and the noise's standard deviation (log
  // scale: about the coefficient of variation between processes), of the fit
  // without the disturbed processes.
  double residual_df() const;
  double noise_sd() const;
  size_t observations() const { return obs_.size(); }

 private:
  struct Observation {
    size_t cell;
    size_t round;
    double log_value;
  };
  struct Fit {
    std::vector<double> effects;     // per cell, then per round but the first
    std::vector<double> covariance;  // row-major, effects x effects, sigma^2 (X'X)^+
    std::vector<double> residuals, leverage;  // per observation used; leverage: the hat matrix's diagonal
    double df = 0, sigma = 0;
  };
  Fit least_squares(const std::vector<bool>& used) const;
  // The most significant disturbed process among `used`, or npos.
  size_t most_disturbed(const std::vector<bool>& used, const Fit& f, double* slower_x, double* p) const;
  void fit() const;
  // The rounds where both cells have a process that was not left out.
  std::vector<std::pair<double, double>> clean_pairs(size_t a, size_t b) const;

  std::map<std::string, size_t> cell_index_;
  std::map<int, size_t> round_index_;
  std::vector<std::string> cell_names_;
  std::vector<int> round_ids_;
  std::vector<Observation> obs_;
  mutable bool fitted_ = false;
  mutable Fit fit_;
  mutable std::vector<bool> used_;  // per observation: not left out
  mutable std::vector<DisturbedProcess> disturbed_;
};

}  // namespace ladder
