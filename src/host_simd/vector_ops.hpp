// The width-abstraction layer: the few vector operations the kernels use, written once
// per vector width through SIMDe. Included only by kernels_impl.hpp, inside the ISA's
// namespace, with DUET_SIMD_VECTOR_BITS set to 128 (SSE4.1), 256 (AVX2) or 512
// (AVX-512BW). Every function is `static inline`: each ISA object keeps its own copies.
//
// Lane order: "up" means towards higher lanes (higher model nodes in striped order).
// shift_up_*() moves every element one lane up across the whole vector and puts zero in
// lane 0 (HMMER's "right shift" of its diagram); callers OR in another fill value, or
// give it to shift_up_u8_fill().
//
// This file is the 128-bit variant fully commented; the 256- and 512-bit variants differ
// only where a whole-vector move crosses 128-bit lanes, and say how.
#pragma once

#include <cstdint>

#if DUET_SIMD_VECTOR_BITS == 128
#include <simde/x86/sse4.1.h>
#elif DUET_SIMD_VECTOR_BITS == 256
#include <simde/x86/avx2.h>
#elif DUET_SIMD_VECTOR_BITS == 512
#include <simde/x86/avx512.h>
#endif

namespace duet::simd::DUET_SIMD_NAMESPACE {

// 128-bit reductions, shared by every width (the wider ones fold down to 128 bits first).
// Largest unsigned byte / signed 16-bit element of 16 bytes: fold halves onto each other.
static inline int hmax_u8_128(simde__m128i v) {
  v = simde_mm_max_epu8(v, simde_mm_srli_si128(v, 8));
  v = simde_mm_max_epu8(v, simde_mm_srli_si128(v, 4));
  v = simde_mm_max_epu8(v, simde_mm_srli_si128(v, 2));
  v = simde_mm_max_epu8(v, simde_mm_srli_si128(v, 1));
  return simde_mm_extract_epi8(v, 0) & 0xff;
}
static inline int hmax_i16_128(simde__m128i v) {
  v = simde_mm_max_epi16(v, simde_mm_srli_si128(v, 8));
  v = simde_mm_max_epi16(v, simde_mm_srli_si128(v, 4));
  v = simde_mm_max_epi16(v, simde_mm_srli_si128(v, 2));
  return static_cast<std::int16_t>(simde_mm_extract_epi16(v, 0));
}
// Sum of the four elements: (e0 + e2) + (e1 + e3).
static inline float hsum_f128(simde__m128 v) {
  v = simde_mm_add_ps(v, simde_mm_movehl_ps(v, v));
  v = simde_mm_add_ss(v, simde_mm_shuffle_ps(v, v, 1));
  return simde_mm_cvtss_f32(v);
}

#if DUET_SIMD_VECTOR_BITS == 128

using IntVector = simde__m128i;
using FloatVector = simde__m128;

static inline IntVector load(const void* p) {
  return simde_mm_load_si128(static_cast<const IntVector*>(p));
}
static inline void store(void* p, IntVector v) {
  simde_mm_store_si128(static_cast<IntVector*>(p), v);
}
static inline IntVector zero_int() {
  return simde_mm_setzero_si128();
}
static inline IntVector bit_or(IntVector a, IntVector b) {
  return simde_mm_or_si128(a, b);
}
// Every byte / 16-bit element set to x.
static inline IntVector splat_u8(std::uint8_t x) {
  return simde_mm_set1_epi8(static_cast<std::int8_t>(x));
}
static inline IntVector splat_i16(std::int16_t x) {
  return simde_mm_set1_epi16(x);
}
// Unsigned bytes: a + b and a - b clamped to 0..255; the larger of a and b.
static inline IntVector adds_u8(IntVector a, IntVector b) {
  return simde_mm_adds_epu8(a, b);
}
static inline IntVector subs_u8(IntVector a, IntVector b) {
  return simde_mm_subs_epu8(a, b);
}
static inline IntVector max_u8(IntVector a, IntVector b) {
  return simde_mm_max_epu8(a, b);
}
// Signed bytes: a - b clamped to -128..127.
static inline IntVector subs_i8(IntVector a, IntVector b) {
  return simde_mm_subs_epi8(a, b);
}
// Signed 16-bit: a + b clamped to -32768..32767; the larger of a and b.
static inline IntVector adds_i16(IntVector a, IntVector b) {
  return simde_mm_adds_epi16(a, b);
}
static inline IntVector max_i16(IntVector a, IntVector b) {
  return simde_mm_max_epi16(a, b);
}
// True when some 16-bit element of a is greater than the same element of b.
static inline bool any_gt_i16(IntVector a, IntVector b) {
  return simde_mm_movemask_epi8(simde_mm_cmpgt_epi16(a, b)) != 0;
}
// True when some bit of v is set.
static inline bool any_nonzero(IntVector v) {
  return !simde_mm_testz_si128(v, v);
}
// Every byte / 16-bit element one lane up, zero into lane 0 (a byte shift of the register).
static inline IntVector shift_up_u8(IntVector v) {
  return simde_mm_slli_si128(v, 1);
}
// Every byte one lane up, and `fill`'s byte into lane 0 (`fill` is a splat: every byte
// the same).
static inline IntVector shift_up_u8_fill(IntVector v, IntVector fill) {
  return simde_mm_alignr_epi8(v, fill, 15);
}
static inline IntVector shift_up_i16(IntVector v) {
  return simde_mm_slli_si128(v, 2);
}
static inline int hmax_u8(IntVector v) {
  return hmax_u8_128(v);
}
static inline int hmax_i16(IntVector v) {
  return hmax_i16_128(v);
}

static inline FloatVector load_f(const float* p) {
  return simde_mm_load_ps(p);
}
static inline void store_f(float* p, FloatVector v) {
  simde_mm_store_ps(p, v);
}
static inline FloatVector zero_f() {
  return simde_mm_setzero_ps();
}
static inline FloatVector splat_f(float x) {
  return simde_mm_set1_ps(x);
}
static inline FloatVector add_f(FloatVector a, FloatVector b) {
  return simde_mm_add_ps(a, b);
}
static inline FloatVector mul_f(FloatVector a, FloatVector b) {
  return simde_mm_mul_ps(a, b);
}
// Every element `lanes` lanes up (zeros into the lowest ones).
template <int lanes>
static inline FloatVector shift_up_f_by(FloatVector v) {
  return simde_mm_castsi128_ps(simde_mm_slli_si128(simde_mm_castps_si128(v), 4 * lanes));
}
static inline FloatVector shift_up_f(FloatVector v) {
  return shift_up_f_by<1>(v);
}
// True when some element of a is greater than the same element of b.
static inline bool any_gt_f(FloatVector a, FloatVector b) {
  return simde_mm_movemask_ps(simde_mm_cmpgt_ps(a, b)) != 0;
}
static inline float hsum_f(FloatVector v) {
  return hsum_f128(v);
}

// Groups of four float lanes, one per 128 bits (the packed canonical Forward keeps one
// target in each group: kernels_impl.hpp). 128 bits are one group.
// Within every group, each element `lanes` lanes up, +0 into the group's lowest ones.
template <int lanes>
static inline FloatVector shift_up_in_groups_f(FloatVector v) {
  return shift_up_f_by<lanes>(v);
}
// The four floats at p (16-byte aligned) in every group.
static inline FloatVector broadcast_group_f(const float* p) {
  return simde_mm_load_ps(p);
}
// Within every group, each element `lanes` lanes down, +0 into the group's highest ones.
template <int lanes>
static inline FloatVector shift_down_in_groups_f(FloatVector v) {
  return simde_mm_castsi128_ps(simde_mm_srli_si128(simde_mm_castps_si128(v), 4 * lanes));
}
// Group g from the four floats at p[g] (16-byte aligned).
static inline FloatVector load_groups_f(const float* const* p) {
  return simde_mm_load_ps(p[0]);
}
// Group g holds values[g] in its four lanes.
static inline FloatVector splat_groups_f(const float* values) {
  return simde_mm_set1_ps(values[0]);
}
// Lane 0 of every group: the group's (e0 + e2) + (e1 + e3), hsum_f128's order; the other
// lanes hold partial sums.
static inline FloatVector hsum_groups_f(FloatVector v) {
  const FloatVector pairs =
      simde_mm_add_ps(v, simde_mm_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(1, 0, 3, 2)));
  return simde_mm_add_ps(pairs, simde_mm_shuffle_ps(pairs, pairs, SIMDE_MM_SHUFFLE(2, 3, 0, 1)));
}

#elif DUET_SIMD_VECTOR_BITS == 256

using IntVector = simde__m256i;
using FloatVector = simde__m256;

static inline IntVector load(const void* p) {
  return simde_mm256_load_si256(static_cast<const IntVector*>(p));
}
static inline void store(void* p, IntVector v) {
  simde_mm256_store_si256(static_cast<IntVector*>(p), v);
}
static inline IntVector zero_int() {
  return simde_mm256_setzero_si256();
}
static inline IntVector bit_or(IntVector a, IntVector b) {
  return simde_mm256_or_si256(a, b);
}
static inline IntVector splat_u8(std::uint8_t x) {
  return simde_mm256_set1_epi8(static_cast<std::int8_t>(x));
}
static inline IntVector splat_i16(std::int16_t x) {
  return simde_mm256_set1_epi16(x);
}
static inline IntVector adds_u8(IntVector a, IntVector b) {
  return simde_mm256_adds_epu8(a, b);
}
static inline IntVector subs_u8(IntVector a, IntVector b) {
  return simde_mm256_subs_epu8(a, b);
}
static inline IntVector max_u8(IntVector a, IntVector b) {
  return simde_mm256_max_epu8(a, b);
}
static inline IntVector subs_i8(IntVector a, IntVector b) {
  return simde_mm256_subs_epi8(a, b);
}
static inline IntVector adds_i16(IntVector a, IntVector b) {
  return simde_mm256_adds_epi16(a, b);
}
static inline IntVector max_i16(IntVector a, IntVector b) {
  return simde_mm256_max_epi16(a, b);
}
static inline bool any_gt_i16(IntVector a, IntVector b) {
  return simde_mm256_movemask_epi8(simde_mm256_cmpgt_epi16(a, b)) != 0;
}
static inline bool any_nonzero(IntVector v) {
  return !simde_mm256_testz_si256(v, v);
}
// Byte shifts work within 128-bit lanes, so the low lane's top bytes are brought into the
// high lane first: t = (low lane 0, high lane v.low); alignr then takes, per lane, the
// top `bytes` bytes of t's lane followed by the lane of v.
template <int bytes>
static inline IntVector shift_up_bytes(IntVector v) {
  const IntVector t = simde_mm256_permute2x128_si256(v, v, 0x08);
  return simde_mm256_alignr_epi8(v, t, 16 - bytes);
}
static inline IntVector shift_up_u8(IntVector v) {
  return shift_up_bytes<1>(v);
}
static inline IntVector shift_up_u8_fill(IntVector v, IntVector fill) {
  const IntVector t = simde_mm256_permute2x128_si256(v, fill, 0x03);  // (fill.high, v.low)
  return simde_mm256_alignr_epi8(v, t, 15);
}
static inline IntVector shift_up_i16(IntVector v) {
  return shift_up_bytes<2>(v);
}
static inline int hmax_u8(IntVector v) {
  return hmax_u8_128(
      simde_mm_max_epu8(simde_mm256_castsi256_si128(v), simde_mm256_extracti128_si256(v, 1)));
}
static inline int hmax_i16(IntVector v) {
  return hmax_i16_128(
      simde_mm_max_epi16(simde_mm256_castsi256_si128(v), simde_mm256_extracti128_si256(v, 1)));
}

static inline FloatVector load_f(const float* p) {
  return simde_mm256_load_ps(p);
}
static inline void store_f(float* p, FloatVector v) {
  simde_mm256_store_ps(p, v);
}
static inline FloatVector zero_f() {
  return simde_mm256_setzero_ps();
}
static inline FloatVector splat_f(float x) {
  return simde_mm256_set1_ps(x);
}
static inline FloatVector add_f(FloatVector a, FloatVector b) {
  return simde_mm256_add_ps(a, b);
}
static inline FloatVector mul_f(FloatVector a, FloatVector b) {
  return simde_mm256_mul_ps(a, b);
}
template <int lanes>
static inline FloatVector shift_up_f_by(FloatVector v) {
  return simde_mm256_castsi256_ps(shift_up_bytes<4 * lanes>(simde_mm256_castps_si256(v)));
}
static inline FloatVector shift_up_f(FloatVector v) {
  return shift_up_f_by<1>(v);
}
static inline bool any_gt_f(FloatVector a, FloatVector b) {
  return simde_mm256_movemask_ps(simde_mm256_cmp_ps(a, b, SIMDE_CMP_GT_OQ)) != 0;
}
static inline float hsum_f(FloatVector v) {
  return hsum_f128(
      simde_mm_add_ps(simde_mm256_castps256_ps128(v), simde_mm256_extractf128_ps(v, 1)));
}

// Groups of four float lanes (see the 128-bit variant): two groups. The in-group shift is
// an in-lane permute (element j of a group takes element j - lanes) blended with +0 in the
// group's lowest lanes (SIMDe 0.7's own in-lane byte shift is not the native one).
template <int lanes>
static inline FloatVector shift_up_in_groups_f(FloatVector v) {
  static_assert(lanes == 1 || lanes == 2);
  if constexpr (lanes == 1) {
    return simde_mm256_blend_ps(simde_mm256_setzero_ps(),
                                simde_mm256_permute_ps(v, SIMDE_MM_SHUFFLE(2, 1, 0, 0)), 0xEE);
  } else {
    return simde_mm256_blend_ps(simde_mm256_setzero_ps(),
                                simde_mm256_permute_ps(v, SIMDE_MM_SHUFFLE(1, 0, 0, 0)), 0xCC);
  }
}
template <int lanes>
static inline FloatVector shift_down_in_groups_f(FloatVector v) {
  static_assert(lanes == 1 || lanes == 2);
  if constexpr (lanes == 1) {
    return simde_mm256_blend_ps(simde_mm256_setzero_ps(),
                                simde_mm256_permute_ps(v, SIMDE_MM_SHUFFLE(3, 3, 2, 1)), 0x77);
  } else {
    return simde_mm256_blend_ps(simde_mm256_setzero_ps(),
                                simde_mm256_permute_ps(v, SIMDE_MM_SHUFFLE(3, 3, 3, 2)), 0x33);
  }
}
static inline FloatVector broadcast_group_f(const float* p) {
  return simde_mm256_broadcast_ps(reinterpret_cast<const simde__m128*>(p));
}
static inline FloatVector load_groups_f(const float* const* p) {
  return simde_mm256_insertf128_ps(simde_mm256_castps128_ps256(simde_mm_load_ps(p[0])),
                                   simde_mm_load_ps(p[1]), 1);
}
static inline FloatVector splat_groups_f(const float* values) {
  return simde_mm256_insertf128_ps(simde_mm256_castps128_ps256(simde_mm_set1_ps(values[0])),
                                   simde_mm_set1_ps(values[1]), 1);
}
static inline FloatVector hsum_groups_f(FloatVector v) {
  const FloatVector pairs =
      simde_mm256_add_ps(v, simde_mm256_permute_ps(v, SIMDE_MM_SHUFFLE(1, 0, 3, 2)));
  return simde_mm256_add_ps(pairs, simde_mm256_permute_ps(pairs, SIMDE_MM_SHUFFLE(2, 3, 0, 1)));
}

#elif DUET_SIMD_VECTOR_BITS == 512

using IntVector = simde__m512i;
using FloatVector = simde__m512;

static inline IntVector load(const void* p) {
  return simde_mm512_load_si512(p);
}
static inline void store(void* p, IntVector v) {
  simde_mm512_store_si512(p, v);
}
static inline IntVector zero_int() {
  return simde_mm512_setzero_si512();
}
static inline IntVector bit_or(IntVector a, IntVector b) {
  return simde_mm512_or_si512(a, b);
}
static inline IntVector splat_u8(std::uint8_t x) {
  return simde_mm512_set1_epi8(static_cast<std::int8_t>(x));
}
static inline IntVector splat_i16(std::int16_t x) {
  return simde_mm512_set1_epi16(x);
}
static inline IntVector adds_u8(IntVector a, IntVector b) {
  return simde_mm512_adds_epu8(a, b);
}
static inline IntVector subs_u8(IntVector a, IntVector b) {
  return simde_mm512_subs_epu8(a, b);
}
static inline IntVector max_u8(IntVector a, IntVector b) {
  return simde_mm512_max_epu8(a, b);
}
static inline IntVector subs_i8(IntVector a, IntVector b) {
  return simde_mm512_subs_epi8(a, b);
}
static inline IntVector adds_i16(IntVector a, IntVector b) {
  return simde_mm512_adds_epi16(a, b);
}
static inline IntVector max_i16(IntVector a, IntVector b) {
  return simde_mm512_max_epi16(a, b);
}
// a > b somewhere <=> not (a <= b everywhere); 32 elements, one mask bit each.
static inline bool any_gt_i16(IntVector a, IntVector b) {
  return simde_mm512_cmple_epi16_mask(a, b) != static_cast<simde__mmask32>(0xffffffffu);
}
static inline bool any_nonzero(IntVector v) {
  return simde_mm512_test_epi8_mask(v, v) != 0;
}
// Two instructions: t's 128-bit lanes are (fill's top lane, v's lanes 0, 1, 2), and alignr
// takes, per lane, t's top byte followed by v's lane. SIMDe 0.7 has no 512-bit alignr, so
// these are the compiler's own intrinsics (this width is always built with -mavx512bw).
#if !defined(SIMDE_X86_AVX512BW_NATIVE)
#error "the 512-bit kernels need AVX-512BW natively (-mavx512bw)"
#endif
static inline IntVector shift_up_u8_fill(IntVector v, IntVector fill) {
  const IntVector t = _mm512_alignr_epi64(v, fill, 6);
  return _mm512_alignr_epi8(v, t, 15);
}
static inline IntVector shift_up_u8(IntVector v) {
  return shift_up_u8_fill(v, zero_int());
}
// 16-bit elements: a full-width permute (element j takes element j - 1), lane 0 zeroed.
static inline IntVector shift_up_i16(IntVector v) {
  alignas(64) static const std::int16_t index[32] = {0,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9,
                                                     10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
                                                     21, 22, 23, 24, 25, 26, 27, 28, 29, 30};
  return simde_mm512_maskz_permutexvar_epi16(0xfffffffeu, load(index), v);
}
static inline int hmax_u8(IntVector v) {
  const simde__m256i half =
      simde_mm256_max_epu8(simde_mm512_castsi512_si256(v), simde_mm512_extracti64x4_epi64(v, 1));
  return hmax_u8_128(
      simde_mm_max_epu8(simde_mm256_castsi256_si128(half), simde_mm256_extracti128_si256(half, 1)));
}
static inline int hmax_i16(IntVector v) {
  const simde__m256i half =
      simde_mm256_max_epi16(simde_mm512_castsi512_si256(v), simde_mm512_extracti64x4_epi64(v, 1));
  return hmax_i16_128(simde_mm_max_epi16(simde_mm256_castsi256_si128(half),
                                         simde_mm256_extracti128_si256(half, 1)));
}

static inline FloatVector load_f(const float* p) {
  return simde_mm512_load_ps(p);
}
static inline void store_f(float* p, FloatVector v) {
  simde_mm512_store_ps(p, v);
}
static inline FloatVector zero_f() {
  return simde_mm512_setzero_ps();
}
static inline FloatVector splat_f(float x) {
  return simde_mm512_set1_ps(x);
}
static inline FloatVector add_f(FloatVector a, FloatVector b) {
  return simde_mm512_add_ps(a, b);
}
static inline FloatVector mul_f(FloatVector a, FloatVector b) {
  return simde_mm512_mul_ps(a, b);
}
// 32-bit elements: a full-width permute (element j takes element j - 1), lane 0 zeroed.
template <int lanes>
static inline FloatVector shift_up_f_by(FloatVector v) {
  const simde__mmask16 keep = static_cast<simde__mmask16>(0xffffu << lanes);
  // Element j takes element j - lanes: the index vector read from `lanes` elements back
  // (the first ones read before the table are masked to zero anyway).
  alignas(64) static const std::int32_t down[32] = {0, 0, 0, 0, 0,  0,  0,  0,  0,  0, 0,
                                                    0, 0, 0, 0, 0,  0,  1,  2,  3,  4, 5,
                                                    6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  return simde_mm512_castsi512_ps(simde_mm512_maskz_permutexvar_epi32(
      keep, simde_mm512_loadu_si512(down + 16 - lanes), simde_mm512_castps_si512(v)));
}
static inline FloatVector shift_up_f(FloatVector v) {
  return shift_up_f_by<1>(v);
}
static inline bool any_gt_f(FloatVector a, FloatVector b) {
  return simde_mm512_cmp_ps_mask(a, b, SIMDE_CMP_GT_OQ) != 0;
}
static inline float hsum_f(FloatVector v) {
  const simde__m256 high =
      simde_mm256_castpd_ps(simde_mm512_extractf64x4_pd(simde_mm512_castps_pd(v), 1));
  const simde__m256 half = simde_mm256_add_ps(simde_mm512_castps512_ps256(v), high);
  return hsum_f128(
      simde_mm_add_ps(simde_mm256_castps256_ps128(half), simde_mm256_extractf128_ps(half, 1)));
}

// Groups of four float lanes (see the 128-bit variant): four groups. The in-group shift is
// an in-lane shuffle (element j of a group takes element j - lanes) with the group's
// lowest lanes masked to +0.
template <int lanes>
static inline FloatVector shift_up_in_groups_f(FloatVector v) {
  static_assert(lanes == 1 || lanes == 2);
  if constexpr (lanes == 1) {
    return simde_mm512_maskz_mov_ps(0xEEEE,
                                    simde_mm512_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(2, 1, 0, 0)));
  } else {
    return simde_mm512_maskz_mov_ps(0xCCCC,
                                    simde_mm512_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(1, 0, 0, 0)));
  }
}
template <int lanes>
static inline FloatVector shift_down_in_groups_f(FloatVector v) {
  static_assert(lanes == 1 || lanes == 2);
  if constexpr (lanes == 1) {
    return simde_mm512_maskz_mov_ps(0x7777,
                                    simde_mm512_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(3, 3, 2, 1)));
  } else {
    return simde_mm512_maskz_mov_ps(0x3333,
                                    simde_mm512_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(3, 3, 3, 2)));
  }
}
static inline FloatVector broadcast_group_f(const float* p) {
  return simde_mm512_broadcast_f32x4(simde_mm_load_ps(p));
}
static inline FloatVector load_groups_f(const float* const* p) {
  FloatVector v = simde_mm512_castps128_ps512(simde_mm_load_ps(p[0]));
  v = simde_mm512_insertf32x4(v, simde_mm_load_ps(p[1]), 1);
  v = simde_mm512_insertf32x4(v, simde_mm_load_ps(p[2]), 2);
  return simde_mm512_insertf32x4(v, simde_mm_load_ps(p[3]), 3);
}
static inline FloatVector splat_groups_f(const float* values) {
  FloatVector v = simde_mm512_castps128_ps512(simde_mm_set1_ps(values[0]));
  v = simde_mm512_insertf32x4(v, simde_mm_set1_ps(values[1]), 1);
  v = simde_mm512_insertf32x4(v, simde_mm_set1_ps(values[2]), 2);
  return simde_mm512_insertf32x4(v, simde_mm_set1_ps(values[3]), 3);
}
static inline FloatVector hsum_groups_f(FloatVector v) {
  const FloatVector pairs =
      simde_mm512_add_ps(v, simde_mm512_shuffle_ps(v, v, SIMDE_MM_SHUFFLE(1, 0, 3, 2)));
  return simde_mm512_add_ps(pairs,
                            simde_mm512_shuffle_ps(pairs, pairs, SIMDE_MM_SHUFFLE(2, 3, 0, 1)));
}

#else
#error "DUET_SIMD_VECTOR_BITS must be 128, 256 or 512"
#endif

// Lanes of each element type in one vector.
static constexpr int kVectorBytes = DUET_SIMD_VECTOR_BITS / 8;
static constexpr int kLanesU8 = kVectorBytes;
static constexpr int kLanesI16 = kVectorBytes / 2;
static constexpr int kLanesF32 = kVectorBytes / 4;
// Groups of four float lanes (128 bits) in one vector.
static constexpr int kGroupsF32 = kVectorBytes / 16;

}  // namespace duet::simd::DUET_SIMD_NAMESPACE
