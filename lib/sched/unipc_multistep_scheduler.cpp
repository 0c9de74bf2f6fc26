#include "sched/unipc_multistep_scheduler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/error.h"

namespace omni::sched {

namespace {

// The B(h) quantities shared by predictor and corrector (predict_x0 form, so hh = -h), in float32.
struct BhTerms {
  float hh;       // -h
  float h_phi_1;  // expm1(hh) = e^hh - 1
  float b_h;      // B(h): expm1(hh) for bh2, hh for bh1
};

BhTerms bh_terms(float h, bool bh2) {
  BhTerms t;
  t.hh = -h;
  t.h_phi_1 = std::expm1(t.hh);
  t.b_h = bh2 ? std::expm1(t.hh) : t.hh;
  return t;
}

// The order x order system R rho = b of UniPC: R[i][j] = rks[j]^i, b[i] = i! h_phi_{i+1}(hh) / B(h) with
// h_phi_{k+1} = h_phi_k / hh - 1/k! (the reference's recursion, in its float32 operation order).
void build_system(const BhTerms& t, const std::vector<float>& rks, std::vector<std::vector<float>>* r,
                  std::vector<float>* b) {
  const int order = static_cast<int>(rks.size());
  r->assign(order, std::vector<float>(order, 0.0f));
  b->assign(order, 0.0f);
  float h_phi_k = t.h_phi_1 / t.hh - 1.0f;
  int64_t factorial_i = 1;
  for (int i = 1; i <= order; ++i) {
    for (int j = 0; j < order; ++j) {
      // torch.pow(rks, i - 1): exactly 1 for exponent 0, the value itself for 1, a product beyond.
      float p = 1.0f;
      for (int e = 0; e < i - 1; ++e) p *= rks[j];
      (*r)[i - 1][j] = p;
    }
    (*b)[i - 1] = h_phi_k * static_cast<float>(factorial_i) / t.b_h;
    factorial_i *= i + 1;
    h_phi_k = h_phi_k / t.hh - static_cast<float>(1.0 / static_cast<double>(factorial_i));
  }
}

// Solves the small dense system in float32 by LU with partial pivoting (LAPACK gesv's algorithm, which
// torch.linalg.solve calls for float32 on CPU).
std::vector<float> solve(std::vector<std::vector<float>> a, std::vector<float> b) {
  const int n = static_cast<int>(b.size());
  for (int k = 0; k < n; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i) {
      if (std::abs(a[i][k]) > std::abs(a[p][k])) p = i;
    }
    OMNI_CHECK(a[p][k] != 0.0f && std::isfinite(a[p][k]), "unipc scheduler: singular rho system (step too large?)");
    std::swap(a[p], a[k]);
    std::swap(b[p], b[k]);
    const float inv = 1.0f / a[k][k];
    for (int i = k + 1; i < n; ++i) {
      const float l = a[i][k] * inv;
      for (int j = k + 1; j < n; ++j) a[i][j] -= l * a[k][j];
      b[i] -= l * b[k];
    }
  }
  std::vector<float> x(n);
  for (int i = n - 1; i >= 0; --i) {
    float s = b[i];
    for (int j = i + 1; j < n; ++j) s -= a[i][j] * x[j];
    x[i] = s / a[i][i];
  }
  return x;
}

// sum_k rho_k * D1_k (the reference's einsum over k; with one term the product alone).
at::Tensor weighted_sum(const std::vector<float>& rhos, const std::vector<at::Tensor>& d1s) {
  at::Tensor acc = d1s[0].mul(static_cast<double>(rhos[0]));
  for (size_t k = 1; k < d1s.size(); ++k) acc = acc.add(d1s[k].mul(static_cast<double>(rhos[k])));
  return acc;
}

}  // namespace

UniPCMultistepScheduler::UniPCMultistepScheduler(FlowSchedulerConfig config) : Scheduler(std::move(config)) {
  OMNI_CHECK(config_.solver_order >= 1 && config_.solver_order <= 2, "unipc scheduler: solver_order ",
             config_.solver_order, " is not supported");
  reset();
}

void UniPCMultistepScheduler::reset() {
  Scheduler::reset();
  model_outputs_.assign(config_.solver_order, at::Tensor());
  last_sample_ = at::Tensor();
  lower_order_nums_ = 0;
  this_order_ = 0;
}

UniPCMultistepScheduler::Point UniPCMultistepScheduler::point(int64_t i) const {
  // _sigma_to_alpha_sigma_t for flow sigmas, then lambda = log(alpha) - log(sigma); at sigma = 0 lambda is +inf.
  Point p;
  p.sigma = schedule_.sigmas[i];
  p.alpha = 1.0f - p.sigma;
  p.lambda = std::log(p.alpha) - std::log(p.sigma);
  return p;
}

at::Tensor UniPCMultistepScheduler::convert_model_output(const at::Tensor& model_output,
                                                         const at::Tensor& sample) const {
  const float sigma = schedule_.sigmas[step_index_];
  // sigma * v keeps v's dtype (a 0-d float32 tensor does not promote it); the difference promotes to the
  // sample's float32.
  return sample.sub(model_output.mul(static_cast<double>(sigma)));
}

at::Tensor UniPCMultistepScheduler::predictor_update(const at::Tensor& sample, int order) const {
  const at::Tensor& m0 = model_outputs_.back();
  const at::Tensor& x = sample;
  const Point t = point(step_index_ + 1);
  const Point s0 = point(step_index_);
  const float h = t.lambda - s0.lambda;

  // Order 2 (the highest supported) uses the reference's simplified predictor rho = 0.5, so the rho system
  // is not needed here; order 1 has no D1 term.
  OMNI_CHECK(order <= 2, "unipc scheduler: predictor order ", order, " is not supported");
  std::vector<at::Tensor> d1s;
  for (int i = 1; i < order; ++i) {
    const int64_t si = step_index_ - i;
    const at::Tensor& mi = model_outputs_[model_outputs_.size() - 1 - i];
    const float rk = (point(si).lambda - s0.lambda) / h;
    d1s.push_back(mi.sub(m0).div(static_cast<double>(rk)));
  }
  const BhTerms bh = bh_terms(h, config_.bh2);
  const std::vector<float> rhos_p = {0.5f};

  // x_t = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0 - alpha_t * B(h) * sum_k rho_k D1_k
  at::Tensor x_t =
      x.mul(static_cast<double>(t.sigma / s0.sigma)).sub(m0.mul(static_cast<double>(t.alpha * bh.h_phi_1)));
  if (!d1s.empty()) {
    x_t = x_t.sub(weighted_sum(rhos_p, d1s).mul(static_cast<double>(t.alpha * bh.b_h)));
  }
  return x_t.to(x.scalar_type());
}

at::Tensor UniPCMultistepScheduler::corrector_update(const at::Tensor& this_model_output, const at::Tensor& last_sample,
                                                     int order) const {
  const at::Tensor& m0 = model_outputs_.back();
  const at::Tensor& x = last_sample;
  const Point t = point(step_index_);
  const Point s0 = point(step_index_ - 1);
  const float h = t.lambda - s0.lambda;

  std::vector<float> rks;
  std::vector<at::Tensor> d1s;
  for (int i = 1; i < order; ++i) {
    const int64_t si = step_index_ - (i + 1);
    const at::Tensor& mi = model_outputs_[model_outputs_.size() - 1 - i];
    const float rk = (point(si).lambda - s0.lambda) / h;
    rks.push_back(rk);
    d1s.push_back(mi.sub(m0).div(static_cast<double>(rk)));
  }
  rks.push_back(1.0f);
  const BhTerms bh = bh_terms(h, config_.bh2);

  std::vector<float> rhos_c;
  if (order == 1) {
    rhos_c = {0.5f};  // the reference's simplified order-1 corrector
  } else {
    std::vector<std::vector<float>> r;
    std::vector<float> b;
    build_system(bh, rks, &r, &b);
    rhos_c = solve(r, b);
  }

  // x_t = sigma_t / sigma_s0 * x - alpha_t * h_phi_1 * m0
  //       - alpha_t * B(h) * (sum_k rho_k D1_k + rho_last * (model_t - m0))
  const at::Tensor x_t_ =
      x.mul(static_cast<double>(t.sigma / s0.sigma)).sub(m0.mul(static_cast<double>(t.alpha * bh.h_phi_1)));
  const at::Tensor d1_t = this_model_output.sub(m0);
  at::Tensor correction = d1_t.mul(static_cast<double>(rhos_c.back()));
  if (!d1s.empty()) {
    const std::vector<float> rhos_head(rhos_c.begin(), rhos_c.end() - 1);
    correction = weighted_sum(rhos_head, d1s).add(correction);
  }
  const at::Tensor x_t = x_t_.sub(correction.mul(static_cast<double>(t.alpha * bh.b_h)));
  return x_t.to(x.scalar_type());
}

at::Tensor UniPCMultistepScheduler::step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) {
  const int64_t k = begin_step(model_output, timestep, sample);
  const int64_t n = num_inference_steps();
  const bool corrector_disabled = std::find(config_.disable_corrector.begin(), config_.disable_corrector.end(),
                                            k - 1) != config_.disable_corrector.end();
  const bool use_corrector = k > 0 && !corrector_disabled && last_sample_.defined();

  const at::Tensor x0 = convert_model_output(model_output, sample);
  at::Tensor current = sample;
  if (use_corrector) current = corrector_update(x0, last_sample_, this_order_);

  // Shift the history: the newest data prediction goes last.
  for (int i = 0; i + 1 < config_.solver_order; ++i) model_outputs_[i] = model_outputs_[i + 1];
  model_outputs_.back() = x0;

  int order = config_.solver_order;
  if (config_.lower_order_final) order = static_cast<int>(std::min<int64_t>(order, n - k));
  this_order_ = std::min(order, lower_order_nums_ + 1);  // warm-up: one order more per step
  OMNI_CHECK(this_order_ > 0, "unipc scheduler: order 0 at step ", k);

  last_sample_ = current;
  at::Tensor prev = predictor_update(current, this_order_);
  if (lower_order_nums_ < config_.solver_order) ++lower_order_nums_;
  ++step_index_;
  return prev;
}

}  // namespace omni::sched
