// reports/stats/block_design.h: intervals of ratios between the cells of one run,
// from all its processes at once.
//
// `ladder run --repeat N` runs every cell once per round, the rounds one after
// another: a randomized complete block design, with rounds as blocks. The log
// of each process's value (its median tokens/s, say) is modelled as
//     log y[cell, round] = cell effect + round effect + noise,
// fitted by least squares. The round effect absorbs what drifts between
// rounds (the machine warming up, a neighbour arriving); the noise's variance
// is pooled over every cell, so two rounds of nine rungs already give eight
// degrees of freedom, where a pair of cells alone would give one. A ratio of
// two cells is then exp(effect b - effect a), its interval from Student's t
// with the residual degrees of freedom. The design may be unbalanced (cells
// with more rounds than others, `--repeat auto`): the covariance of the
// effects is sigma^2 (X'X)^+, solved with LibTorch's linear algebra.
//
// The assumption is a shared noise level (on the log scale) across cells; a
// cell much noisier than the rest has an interval that is too narrow.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "reports/stats/inference.h"

namespace ladder {

class BlockDesign {
 public:
  // One process's value (> 0) of `cell` in `round`.
  void add(const std::string& cell, int round, double value);
  // value(b) over value(a), with its interval; no interval when the design
  // leaves no degree of freedom for the noise (one round, say) or does not
  // connect the two cells. Fits the model at the first call after add().
  RatioInterval ratio(const std::string& a, const std::string& b, double confidence = 0.95) const;
  // The residual degrees of freedom and the noise's standard deviation (log
  // scale: about the coefficient of variation between processes).
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
    double df = 0, sigma = 0;
    std::vector<size_t> cells_with_data;
  };
  void fit() const;

  std::map<std::string, size_t> cell_index_;
  std::map<int, size_t> round_index_;
  std::vector<Observation> obs_;
  mutable bool fitted_ = false;
  mutable Fit fit_;
};

}  // namespace ladder
