// Striping of per-node score arrays into the order of core/hmmsearch/striped_layout.hpp: the
// aligned buffers, the per-row helpers shared by every striped layout (host_simd's MSV, SSV and
// Viterbi layouts use them too), and the Forward layout, which the canonical Forward
// (4 lanes) and the SIMD Forward parsers (4, 8, 16 lanes) share. Every buffer is 64-byte
// aligned and every row is whole vectors, so one scheme serves every width up to AVX-512.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <new>
#include <vector>

#include "core/hmmsearch/profile.hpp"
#include "core/hmmsearch/striped_layout.hpp"

namespace duet {

inline constexpr std::size_t kBufferAlignment = 64;  // bytes: the widest vector

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  explicit AlignedAllocator(const AlignedAllocator<U>&) {}
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kBufferAlignment}); }
  friend bool operator==(const AlignedAllocator&, const AlignedAllocator&) { return true; }
};
template <class T>
using AlignedBuffer = std::vector<T, AlignedAllocator<T>>;

// Scratch memory that every use writes before it reads (DP matrices, parser states): 64-byte
// aligned, its elements not initialised, and its contents not kept when it grows (no
// zeroing and no copy, which an AlignedBuffer's resize does).
template <class T>
class ScratchBuffer {
 public:
  // Room for at least n elements, their values unspecified.
  void make_room(std::size_t n) {
    if (n > capacity_) {
      // Doubling from a few pages: each growth is memory the system gives anew.
      capacity_ = std::max({n, 2 * capacity_, kFirstBytes / sizeof(T)});
      data_.reset(AlignedAllocator<T>().allocate(capacity_));
    }
    size_ = n;
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(T* p) const { AlignedAllocator<T>().deallocate(p, 0); }
  };
  static constexpr std::size_t kFirstBytes = std::size_t{1} << 16;
  std::unique_ptr<T, Free> data_;
  std::size_t size_ = 0, capacity_ = 0;
};

// Vectors per row for M nodes in `lanes` lanes (at least one).
int striped_segments(int M, int lanes);

inline std::size_t striped_row_elements(int Q, int lanes) {
  return static_cast<std::size_t>(Q) * static_cast<std::size_t>(lanes);
}

// Stripes one per-node array (index k = 1..M) into `out`, with `stride` elements between
// consecutive vectors q (lanes for a plain row, more when interleaved).
template <class T, class Source>
void stripe_row(const Source& source, int M, int Q, std::size_t stride, T* out) {
  for (int k = 1; k <= M; ++k) {
    const int q = (k - 1) % Q;
    const int lane = (k - 1) / Q;
    out[static_cast<std::size_t>(q) * stride + static_cast<std::size_t>(lane)] = source[k];
  }
}

template <class T, class Target>
void unstripe_row(const T* in, int M, int Q, std::size_t stride, Target& target) {
  for (int k = 1; k <= M; ++k) {
    const int q = (k - 1) % Q;
    const int lane = (k - 1) / Q;
    target[k] = in[static_cast<std::size_t>(q) * stride + static_cast<std::size_t>(lane)];
  }
}

// The transitions of ViterbiScores or ForwardScores into `out` ((kVitPerQ + 1) * Q * lanes
// elements, padding already filled), and back.
template <class Scores, class T>
void stripe_transitions(const Scores& scores, int Q, int lanes, T* out) {
  const std::array<const std::vector<T>*, kVitPerQ + 1> rows{
      &scores.bm, &scores.mm, &scores.im, &scores.dm,
      &scores.md, &scores.mi, &scores.ii, &scores.dd};  // in ViterbiStripedTransition order
  const std::size_t per_q = striped_row_elements(kVitPerQ, lanes);
  for (int t = 0; t < kVitPerQ; ++t) {
    stripe_row(*rows[t], scores.M, Q, per_q, out + striped_row_elements(t, lanes));
  }
  stripe_row(*rows[kVitPerQ], scores.M, Q, static_cast<std::size_t>(lanes),
             out + per_q * static_cast<std::size_t>(Q));
}

template <class Scores, class T>
void unstripe_transitions(const T* in, int M, int Q, int lanes, Scores& scores) {
  const std::array<std::vector<T>*, kVitPerQ + 1> rows{&scores.bm, &scores.mm, &scores.im,
                                                       &scores.dm, &scores.md, &scores.mi,
                                                       &scores.ii, &scores.dd};
  const std::size_t per_q = striped_row_elements(kVitPerQ, lanes);
  for (int t = 0; t < kVitPerQ; ++t) {
    unstripe_row(in + striped_row_elements(t, lanes), M, Q, per_q, *rows[t]);
  }
  unstripe_row(in + per_q * static_cast<std::size_t>(Q), M, Q, static_cast<std::size_t>(lanes),
               *rows[kVitPerQ]);
}

struct StripedForwardProfile {
  int M = 0, Kp = 0, lanes = 0, Q = 0;
  float e_loop = 0, e_move = 0;
  AlignedBuffer<float> match;        // Kp * Q * lanes
  AlignedBuffer<float> transitions;  // (kVitPerQ + 1) * Q * lanes, the Viterbi order
  AlignedBuffer<float> dd_prefix;    // (Q + 1) * lanes, derived from D->D (striped_layout.hpp)
  AlignedBuffer<float> dd_suffix;    // Q * lanes, the same
  AlignedBuffer<float> dd_ones;      // Q * lanes, the same
  ForwardStripedView view() const;
};
StripedForwardProfile stripe_forward_scores(const ForwardScores& fwd, int lanes);
ForwardScores unstripe_forward_scores(const StripedForwardProfile& striped);

}  // namespace duet
