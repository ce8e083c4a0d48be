// Score statistics as HMMER computes them (Easel's esl_gumbel / esl_exponential).
#pragma once

#include <cmath>

namespace duet {

// P(S > x) for a Gumbel with location mu and scale lambda (MSV, Viterbi scores).
inline double gumbel_survival(double x, double mu, double lambda) {
  const double y = lambda * (x - mu);
  const double ey = -std::exp(-y);
  if (std::fabs(ey) < 5e-9) return -ey;  // 1 - e^-u ~ u for small u
  return 1.0 - std::exp(ey);
}

// log P(S > x) for an exponential tail at tau with rate lambda (Forward scores).
inline double exponential_log_survival(double x, double tau, double lambda) {
  if (x < tau) return 0.0;
  return -lambda * (x - tau);
}

inline double exponential_survival(double x, double tau, double lambda) {
  if (x < tau) return 1.0;
  return std::exp(-lambda * (x - tau));
}

constexpr double kLog2 = 0.69314718055994529;  // nats per bit

}  // namespace duet
