// reports/stats/block_design.cpp: see block_design.h.
#include "reports/stats/block_design.h"

#include <cmath>
#include <stdexcept>

#include <torch/torch.h>

namespace ladder {

void BlockDesign::add(const std::string& cell, int round, double value) {
  if (!(value > 0)) throw std::invalid_argument("BlockDesign: a value must be positive (cell " + cell + ")");
  const size_t c = cell_index_.emplace(cell, cell_index_.size()).first->second;
  const size_t r = round_index_.emplace(round, round_index_.size()).first->second;
  obs_.push_back({c, r, std::log(value)});
  fitted_ = false;
}

void BlockDesign::fit() const {
  fit_ = Fit{};
  fitted_ = true;
  const int64_t n = int64_t(obs_.size()), cells = int64_t(cell_index_.size()), rounds = int64_t(round_index_.size());
  const int64_t p = cells + std::max<int64_t>(rounds - 1, 0);
  if (n == 0) return;
  // One column per cell, one per round but the first (its effect is folded
  // into the cells'); y the log values.
  auto opts = torch::TensorOptions().dtype(torch::kFloat64);
  torch::Tensor X = torch::zeros({n, p}, opts), y = torch::empty({n}, opts);
  auto Xa = X.accessor<double, 2>();
  auto ya = y.accessor<double, 1>();
  for (int64_t i = 0; i < n; ++i) {
    Xa[i][int64_t(obs_[size_t(i)].cell)] = 1;
    if (obs_[size_t(i)].round > 0) Xa[i][cells + int64_t(obs_[size_t(i)].round) - 1] = 1;
    ya[i] = obs_[size_t(i)].log_value;
  }
  const torch::Tensor xtx_pinv = torch::linalg_pinv(X.t().mm(X), /*rcond=*/1e-10, /*hermitian=*/true);  // (p, p)
  const torch::Tensor beta = xtx_pinv.mm(X.t().mm(y.unsqueeze(1))).squeeze(1);                     // (p)
  const torch::Tensor resid = y - X.mv(beta);                                                        // (n)
  const int64_t rank = torch::linalg_matrix_rank(X).item<int64_t>();
  fit_.df = double(n - rank);
  fit_.sigma = fit_.df > 0 ? std::sqrt(resid.dot(resid).item<double>() / fit_.df) : 0.0;
  const torch::Tensor cov = xtx_pinv * (fit_.sigma * fit_.sigma);
  fit_.effects.assign(beta.data_ptr<double>(), beta.data_ptr<double>() + p);
  fit_.covariance.assign(cov.contiguous().data_ptr<double>(), cov.contiguous().data_ptr<double>() + p * p);
}

RatioInterval BlockDesign::ratio(const std::string& a, const std::string& b, double confidence) const {
  const auto ia = cell_index_.find(a), ib = cell_index_.find(b);
  if (ia == cell_index_.end() || ib == cell_index_.end()) return {};
  if (!fitted_) fit();
  const size_t p = fit_.effects.size();
  const size_t i = ia->second, j = ib->second;
  const double d = fit_.effects[j] - fit_.effects[i];
  RatioInterval r;
  r.ratio = std::exp(d);
  r.confidence = confidence;
  r.df = fit_.df;
  r.method = "block_design";
  if (!(fit_.df > 0)) return r;
  const double var = fit_.covariance[j * p + j] + fit_.covariance[i * p + i] - 2 * fit_.covariance[i * p + j];
  const double se = std::sqrt(std::max(var, 0.0));
  if (se == 0) {
    r.lo = r.hi = r.ratio;
    r.p_value = d == 0 ? 1.0 : 0.0;
    return r;
  }
  const double half = student_t_quantile(0.5 + confidence / 2, fit_.df) * se;
  r.lo = std::exp(d - half);
  r.hi = std::exp(d + half);
  r.p_value = student_t_two_sided_p(d / se, fit_.df);
  return r;
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
