// The pair-HMM model, the scalar reference and the canonical computation (see
// pairhmm_model.hpp).
#include "core/pairhmm/pairhmm_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace duet::pairhmm {

namespace {

constexpr double kJacobianStep = 1e-4;
constexpr double kJacobianTolerance = 8.0;

// log10(1 + 10^(-k * step)) for k = 0 .. tolerance / step.
const std::vector<double>& jacobian_table() {
  static const std::vector<double> table = [] {
    const int size = static_cast<int>(kJacobianTolerance / kJacobianStep) + 1;
    std::vector<double> t(static_cast<std::size_t>(size));
    for (int k = 0; k < size; ++k)
      t[static_cast<std::size_t>(k)] = std::log10(1.0 + std::pow(10.0, -k * kJacobianStep));
    return t;
  }();
  return table;
}

// Float arithmetic with flush to zero as x86's FTZ mode does it: a result is tiny, and
// becomes a zero of its sign, when rounded to float precision with an unbounded exponent
// it is below FLT_MIN, that is when the exact result is below FLT_MIN * (1 - 2^-25) in
// magnitude (measured: exact products just below FLT_MIN that round up to it are kept).
// The exact result is formed in double (exact for a product of floats; for a sum, close
// enough that rounding it to float gives the correctly rounded float sum), tested, then
// rounded once.
constexpr double kTiny = 0x1p-126 * (1.0 - 0x1p-25);
float flush_to_zero(double exact) {
  return std::fabs(exact) < kTiny ? std::copysign(0.0f, static_cast<float>(exact))
                                  : static_cast<float>(exact);
}
float mul(float a, float b) {
  return flush_to_zero(static_cast<double>(a) * static_cast<double>(b));
}
float add(float a, float b) {
  return flush_to_zero(static_cast<double>(a) + static_cast<double>(b));
}
// Double: IEEE arithmetic, subnormals kept.
double mul(double a, double b) {
  return a * b;
}
double add(double a, double b) {
  return a + b;
}

std::size_t triangle_index(int max_quality, int min_quality) {
  return static_cast<std::size_t>(max_quality * (max_quality + 1) / 2 + min_quality);
}

}  // namespace

float canonical_product(float a, float b) {
  return mul(a, b);
}
float canonical_sum(float a, float b) {
  return add(a, b);
}

double approximate_log10_sum(double a, double b) {
  const double small = std::min(a, b), big = std::max(a, b);
  if (small == -std::numeric_limits<double>::infinity()) return big;
  const double difference = big - small;
  if (difference >= kJacobianTolerance) return big;
  // Round half up, as GATK's fastRound does for a positive argument.
  const auto index = static_cast<std::size_t>(difference / kJacobianStep + 0.5);
  return big + jacobian_table()[index];
}

Model::Model(ModelOptions options) : options_(options) {
  error_probability_.resize(kMaxQuality + 1);
  for (int q = 0; q <= kMaxQuality; ++q)
    error_probability_[static_cast<std::size_t>(q)] = std::pow(10.0, -q / 10.0);
  match_to_match_.resize(triangle_index(kMaxQuality, kMaxQuality) + 1);
  for (int high = 0; high <= kMaxQuality; ++high)
    for (int low = 0; low <= high; ++low) {
      match_to_match_[triangle_index(high, low)] =
          1.0 - std::pow(10.0, approximate_log10_sum(-0.1 * high, -0.1 * low));
    }
}

double Model::match_to_match(int insertion_quality, int deletion_quality) const {
  return match_to_match_[triangle_index(std::max(insertion_quality, deletion_quality),
                                        std::min(insertion_quality, deletion_quality))];
}

template <class T>
void Model::rows(const Read& read, std::vector<RowParameters<T>>& out) const {
  out.resize(read.bases.size());
  for (std::size_t i = 0; i < read.bases.size(); ++i) {
    const int base_q = std::max<int>(read.base_quality[i], options_.min_base_quality);
    const double base_error = error_probability(base_q);
    const double gap_error = error_probability(read.gcp_quality[i]);
    out[i] = RowParameters<T>{
        static_cast<T>(match_to_match(read.insertion_quality[i], read.deletion_quality[i])),
        static_cast<T>(1.0 - gap_error),
        static_cast<T>(error_probability(read.insertion_quality[i])),
        static_cast<T>(error_probability(read.deletion_quality[i])),
        static_cast<T>(gap_error),
        static_cast<T>(1.0 - base_error),
        static_cast<T>(base_error / 3.0),
    };
  }
}
template void Model::rows<float>(const Read&, std::vector<RowParameters<float>>&) const;
template void Model::rows<double>(const Read&, std::vector<RowParameters<double>>&) const;

double reference_log10_likelihood(const Model& model, const Pair& pair) {
  const Read& read = *pair.read;
  const Haplotype& haplotype = *pair.haplotype;
  const int R = read.length(), C = haplotype.length();
  using Matrix = std::vector<std::vector<double>>;
  Matrix M(R + 1, std::vector<double>(C + 1, 0.0)), X = M, Y = M;
  for (int c = 0; c <= C; ++c) Y[0][c] = kDoubleInitialConstant / C;

  for (int r = 1; r <= R; ++r) {
    const int i = r - 1;  // read position of row r
    const double base_error = model.error_probability(
        std::max<int>(read.base_quality[i], model.options().min_base_quality));
    const double gap_error = model.error_probability(read.gcp_quality[i]);
    const double mm = model.match_to_match(read.insertion_quality[i], read.deletion_quality[i]);
    const double gm = 1.0 - gap_error;
    const double mi = model.error_probability(read.insertion_quality[i]);
    const double md = model.error_probability(read.deletion_quality[i]);
    const double ge = gap_error;
    for (int c = 1; c <= C; ++c) {
      const bool match = bases_match(read.bases[i], haplotype.bases[c - 1]);
      const double emission = match ? 1.0 - base_error : base_error / 3.0;
      M[r][c] = ((M[r - 1][c - 1] * mm + X[r - 1][c - 1] * gm) + Y[r - 1][c - 1] * gm) * emission;
      X[r][c] = M[r - 1][c] * mi + X[r - 1][c] * ge;
      Y[r][c] = M[r][c - 1] * md + Y[r][c - 1] * ge;
    }
  }
  double sum = 0;
  for (int c = 1; c <= C; ++c) sum += M[R][c] + X[R][c];
  return std::log10(sum) - std::log10(kDoubleInitialConstant);
}

template <class T>
T forward_sum(const Model& model, const Pair& pair) {
  const Read& read = *pair.read;
  const Haplotype& haplotype = *pair.haplotype;
  const int R = read.length(), C = haplotype.length();
  std::vector<RowParameters<T>> rows;
  model.rows(read, rows);
  const T initial = std::is_same_v<T, float> ? static_cast<T>(Model::initial_deletion_float(C))
                                             : static_cast<T>(Model::initial_deletion_double(C));
  // Previous row (index c = 0..C) and the row being computed.
  std::vector<T> M_prev(C + 1, T(0)), X_prev(C + 1, T(0)), Y_prev(C + 1, initial);
  std::vector<T> M_row(C + 1, T(0)), X_row(C + 1, T(0)), Y_row(C + 1, T(0));
  for (int r = 1; r <= R; ++r) {
    const RowParameters<T>& p = rows[static_cast<std::size_t>(r - 1)];
    const std::uint8_t read_base = read.bases[static_cast<std::size_t>(r - 1)];
    M_row[0] = X_row[0] = Y_row[0] = T(0);
    for (int c = 1; c <= C; ++c) {
      const T emission = bases_match(read_base, haplotype.bases[static_cast<std::size_t>(c - 1)])
                             ? p.emission_match
                             : p.emission_mismatch;
      M_row[c] =
          mul(add(add(mul(M_prev[c - 1], p.match_to_match), mul(X_prev[c - 1], p.indel_to_match)),
                  mul(Y_prev[c - 1], p.indel_to_match)),
              emission);
      X_row[c] = add(mul(M_prev[c], p.match_to_insertion), mul(X_prev[c], p.gap_extension));
      Y_row[c] = add(mul(M_row[c - 1], p.match_to_deletion), mul(Y_row[c - 1], p.gap_extension));
    }
    std::swap(M_prev, M_row);
    std::swap(X_prev, X_row);
    std::swap(Y_prev, Y_row);
  }
  T sum = 0;
  for (int c = 1; c <= C; ++c) sum = add(sum, add(M_prev[c], X_prev[c]));
  return sum;
}
template float forward_sum<float>(const Model&, const Pair&);
template double forward_sum<double>(const Model&, const Pair&);

void forward_sums_scalar(const Model& model, std::span<const Pair> pairs, float* sums) {
  for (std::size_t i = 0; i < pairs.size(); ++i) sums[i] = forward_sum<float>(model, pairs[i]);
}

Likelihood finish_likelihood(const Model& model, const Pair& pair, float float_sum) {
  if (float_sum < kDoubleFallbackThreshold) {
    const double sum = forward_sum<double>(model, pair);
    return {std::log10(sum) - std::log10(kDoubleInitialConstant), true};
  }
  return {std::log10(static_cast<double>(float_sum)) -
              std::log10(static_cast<double>(kFloatInitialConstant)),
          false};
}

}  // namespace duet::pairhmm
