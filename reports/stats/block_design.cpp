// reports/stats/block_design.cpp: see block_design.h.
#include "reports/stats/block_design.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include <torch/torch.h>

namespace ladder {

void BlockDesign::add(const std::string& cell, int round, double value) {
  if (!(value > 0)) throw std::invalid_argument("BlockDesign: a value must be positive (cell " + cell + ")");
  const auto [c, new_cell] = cell_index_.emplace(cell, cell_index_.size());
  if (new_cell) cell_names_.push_back(cell);
  const auto [r, new_round] = round_index_.emplace(round, round_index_.size());
  if (new_round) round_ids_.push_back(round);
  obs_.push_back({c->second, r->second, std::log(value)});
  fitted_ = false;
}

BlockDesign::Fit BlockDesign::least_squares(const std::vector<bool>& used) const {
  Fit f;
  std::vector<size_t> rows;
  for (size_t i = 0; i < obs_.size(); ++i)
    if (used[i]) rows.push_back(i);
  const int64_t n = int64_t(rows.size()), cells = int64_t(cell_index_.size()), rounds = int64_t(round_index_.size());
  const int64_t p = cells + std::max<int64_t>(rounds - 1, 0);
  if (n == 0) return f;
  // One column per cell, one per round but the first (its effect is folded
  // into the cells'); y the log values.
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor X = torch::zeros({n, p}, opts), y = torch::empty({n}, opts);
  auto Xa = X.accessor<double, 2>();
  auto ya = y.accessor<double, 1>();
  for (int64_t i = 0; i < n; ++i) {
    const Observation& o = obs_[rows[size_t(i)]];
    Xa[i][int64_t(o.cell)] = 1;
    if (o.round > 0) Xa[i][cells + int64_t(o.round) - 1] = 1;
    ya[i] = o.log_value;
  }
  const torch::Tensor xtx_pinv = torch::linalg_pinv(X.t().mm(X), /*rcond=*/1e-10, /*hermitian=*/true);  // (p, p)
  const torch::Tensor beta = xtx_pinv.mm(X.t().mm(y.unsqueeze(1))).squeeze(1);                     // (p)
  const torch::Tensor resid = (y - X.mv(beta)).contiguous();                                        // (n)
  const torch::Tensor leverage = (X.mm(xtx_pinv) * X).sum(1).contiguous();                           // (n): diag of the hat matrix
  const int64_t rank = torch::linalg_matrix_rank(X).item<int64_t>();
  f.df = double(n - rank);
  f.sigma = f.df > 0 ? std::sqrt(resid.dot(resid).item<double>() / f.df) : 0.0;
  const torch::Tensor cov = (xtx_pinv * (f.sigma * f.sigma)).contiguous();
  f.effects.assign(beta.data_ptr<double>(), beta.data_ptr<double>() + p);
  f.covariance.assign(cov.data_ptr<double>(), cov.data_ptr<double>() + p * p);
  // Per observation (not per row): 0 for one left out.
  f.residuals.assign(obs_.size(), 0.0);
  f.leverage.assign(obs_.size(), 0.0);
  for (int64_t i = 0; i < n; ++i) {
    f.residuals[rows[size_t(i)]] = resid.data_ptr<double>()[i];
    f.leverage[rows[size_t(i)]] = leverage.data_ptr<double>()[i];
  }
  return f;
}

size_t BlockDesign::most_disturbed(const std::vector<bool>& used, const Fit& f, double* slower_x, double* p) const {
  const double df_without = f.df - 1;  // of a fit without the process tested
  if (!(df_without >= 1)) return std::string::npos;
  const double rss = f.sigma * f.sigma * f.df;
  // Only a process the others predict can be tested (leverage below 1: not
  // the only process of its cell, say).
  std::vector<size_t> testable;
  for (size_t i = 0; i < obs_.size(); ++i)
    if (used[i] && 1 - f.leverage[i] > 1e-9) testable.push_back(i);
  size_t worst = std::string::npos;
  double worst_p = 1;
  for (size_t i : testable) {
    const double keep = 1 - f.leverage[i];
    const double deleted = f.residuals[i] / keep;  // the process's log value less what the others predict
    if (!(std::exp(-deleted) >= kDisturbedMinSlowdown)) continue;
    const double rss_without = std::max(rss - f.residuals[i] * deleted, 0.0);
    const double s_without = std::sqrt(rss_without / df_without);
    const double t = s_without > 0 ? f.residuals[i] / (s_without * std::sqrt(keep))
                                   : -std::numeric_limits<double>::infinity();
    const double adjusted = std::min(1.0, student_t_cdf(t, df_without) * double(testable.size()));
    if (adjusted < kDisturbedAlpha && adjusted <= worst_p) {
      worst = i;
      worst_p = adjusted;
      *slower_x = std::exp(-deleted);
      *p = adjusted;
    }
  }
  return worst;
}

void BlockDesign::fit() const {
  fitted_ = true;
  used_.assign(obs_.size(), true);
  disturbed_.clear();
  fit_ = least_squares(used_);
  for (;;) {
    double slower_x = 1, p = 1;
    const size_t i = most_disturbed(used_, fit_, &slower_x, &p);
    if (i == std::string::npos) break;
    used_[i] = false;
    const Observation& o = obs_[i];
    disturbed_.push_back({cell_names_[o.cell], round_ids_[o.round], std::exp(o.log_value), slower_x, p});
    fit_ = least_squares(used_);
  }
}

std::vector<std::pair<double, double>> BlockDesign::clean_pairs(size_t a, size_t b) const {
  std::map<size_t, double> a_by_round;
  for (size_t i = 0; i < obs_.size(); ++i)
    if (used_[i] && obs_[i].cell == a) a_by_round[obs_[i].round] = obs_[i].log_value;
  std::vector<std::pair<double, double>> pairs;
  for (size_t i = 0; i < obs_.size(); ++i)
    if (const auto it = a_by_round.find(obs_[i].round); used_[i] && obs_[i].cell == b && it != a_by_round.end())
      pairs.emplace_back(std::exp(it->second), std::exp(obs_[i].log_value));
  return pairs;
}

RatioInterval BlockDesign::ratio(const std::string& a, const std::string& b, double confidence) const {
  const auto ia = cell_index_.find(a), ib = cell_index_.find(b);
  if (ia == cell_index_.end() || ib == cell_index_.end()) return {};
  if (!fitted_) fit();
  const size_t p = fit_.effects.size();
  const size_t i = ia->second, j = ib->second;
  const double d = fit_.effects[j] - fit_.effects[i];
  RatioInterval r;
  std::vector<double> va, vb;
  for (const auto& [x, y] : clean_pairs(i, j)) {
    va.push_back(x);
    vb.push_back(y);
  }
  r.ratio = va.empty() ? std::exp(d) : median_ratio(va, vb);  // no clean round in common: the fit's
  r.confidence = confidence;
  r.df = fit_.df;
  r.method = "block_design";
  for (const auto& x : disturbed_) r.left_out += int(x.cell == a || x.cell == b);
  if (!(fit_.df > 0)) return r;
  const double var = fit_.covariance[j * p + j] + fit_.covariance[i * p + i] - 2 * fit_.covariance[i * p + j];
  const double se = std::sqrt(std::max(var, 0.0));
  if (se == 0) {
    r.lo = r.hi = std::exp(d);
    r.p_value = d == 0 ? 1.0 : 0.0;
    return r;
  }
  const double half = student_t_quantile(0.5 + confidence / 2, fit_.df) * se;
  r.lo = std::exp(d - half);
  r.hi = std::exp(d + half);
  r.p_value = student_t_two_sided_p(d / se, fit_.df);
  return r;
}

const std::vector<DisturbedProcess>& BlockDesign::disturbed() const {
  if (!fitted_) fit();
  return disturbed_;
}

bool BlockDesign::is_disturbed(const std::string& cell, int round) const {
  for (const auto& x : disturbed())
    if (x.cell == cell && x.round == round) return true;
  return false;
}

double BlockDesign::residual_df() const {
  if (!fitted_) fit();
  return fit_.df;
}

double BlockDesign::noise_sd() const {
  if (!fitted_) fit();
  return fit_.sigma;
}

}  // namespace ladder
