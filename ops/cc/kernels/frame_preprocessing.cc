// Exact integer area resize (see frame_preprocessing.h for the rule).
#include "frame_preprocessing.h"

#include <algorithm>

#if defined(__AVX512VBMI__) || WORKBENCH_AVX512_RESIZE
#include <immintrin.h>
#endif

namespace workbench {

AreaAxis MakeAreaAxis(int in_size, int out_size) {
  AreaAxis axis;
  axis.in_size = in_size;
  axis.out_size = out_size;
  std::vector<int> first(out_size);
  std::vector<std::vector<int32_t>> weights(out_size);
  for (int o = 0; o < out_size; ++o) {
    // Output o covers [o*in, (o+1)*in); source s covers [s*out, (s+1)*out).
    const int64_t lo = static_cast<int64_t>(o) * in_size;
    const int64_t hi = lo + in_size;
    first[o] = static_cast<int>(lo / out_size);
    const int last = static_cast<int>((hi - 1) / out_size);
    for (int s = first[o]; s <= last; ++s) {
      const int64_t s_lo = static_cast<int64_t>(s) * out_size;
      weights[o].push_back(static_cast<int32_t>(std::min(hi, s_lo + out_size) - std::max(lo, s_lo)));
    }
    axis.taps = std::max(axis.taps, static_cast<int>(weights[o].size()));
  }
  axis.first.resize(out_size);
  axis.weight.assign(static_cast<size_t>(out_size) * axis.taps, 0);
  for (int o = 0; o < out_size; ++o) {
    // Every output reads `taps` sources; near the end the window starts
    // earlier and its leading weights stay 0, so all reads are in range.
    axis.first[o] = std::min(first[o], in_size - axis.taps);
    const int shift = first[o] - axis.first[o];
    for (size_t t = 0; t < weights[o].size(); ++t) axis.weight[o * axis.taps + shift + t] = weights[o][t];
  }
  return axis;
}

FrameResizer::FrameResizer(int in_h, int in_w, int out_h, int out_w)
    : rows_(MakeAreaAxis(in_h, out_h)),
      cols_(MakeAreaAxis(in_w, out_w)),
      divisor_(static_cast<uint32_t>(in_h * in_w)),
      inverse_divisor_(1.0f / static_cast<float>(in_h * in_w)) {
#if WORKBENCH_AVX512_RESIZE
  // Chunks of 16 outputs for the vector column pass, when every chunk's taps
  // fall in 32 consecutive sums (true for 160 -> 84); else the scalar loop runs.
  const int taps = cols_.taps;
  if (taps > 3) return;  // Chunk holds up to 3 taps
  for (int j0 = 0; j0 < out_w; j0 += 16) {
    Chunk chunk;
    chunk.base = cols_.first[j0];
    chunk.lanes = 0;
    for (int lane = 0; lane < 16; ++lane) {
      const int j = j0 + lane;
      for (int t = 0; t < taps; ++t) {
        chunk.index[16 * t + lane] = 0;
        chunk.weight[16 * t + lane] = 0;
        if (j >= out_w) continue;
        const int offset = cols_.first[j] + t - chunk.base;
        if (offset >= 32) {
          chunks_.clear();
          return;
        }
        chunk.index[16 * t + lane] = offset;
        chunk.weight[16 * t + lane] = cols_.weight[j * taps + t];
      }
      if (j < out_w) chunk.lanes |= static_cast<uint16_t>(1u << lane);
    }
    chunks_.push_back(chunk);
  }
#endif
}

namespace {

// dst[p] = max(gray[a[p]], gray[b[p]]) for p < n.
void MaxGray(const uint8_t* a, const uint8_t* b, const uint8_t* gray, uint8_t* dst, size_t n) {
  size_t p = 0;
#if defined(__AVX512VBMI__) && defined(__AVX512BW__)
  // 64 table lookups per instruction pair: vpermi2b looks up 128 entries,
  // bit 7 of the index picks the half of the table.
  const __m512i t0 = _mm512_loadu_si512(gray), t1 = _mm512_loadu_si512(gray + 64);
  const __m512i t2 = _mm512_loadu_si512(gray + 128), t3 = _mm512_loadu_si512(gray + 192);
  auto lookup = [&](__m512i index) {
    const __m512i low = _mm512_permutex2var_epi8(t0, index, t1);
    const __m512i high = _mm512_permutex2var_epi8(t2, index, t3);
    return _mm512_mask_blend_epi8(_mm512_movepi8_mask(index), low, high);
  };
  for (; p + 64 <= n; p += 64) {
    const __m512i ga = lookup(_mm512_loadu_si512(a + p));
    const __m512i gb = lookup(_mm512_loadu_si512(b + p));
    _mm512_storeu_si512(dst + p, _mm512_max_epu8(ga, gb));
  }
#endif
  for (; p < n; ++p) dst[p] = std::max(gray[a[p]], gray[b[p]]);
}

}  // namespace

void FrameResizer::MaxAndResize(const uint8_t* a, const uint8_t* b, const uint8_t* gray, uint8_t* out,
                                Scratch* scratch) const {
  const int in_h = rows_.in_size, in_w = cols_.in_size;
  const int out_h = rows_.out_size, out_w = cols_.out_size;
  const int row_taps = rows_.taps, col_taps = cols_.taps;
  scratch->frame.resize(static_cast<size_t>(in_h) * in_w);
  if (scratch->column_sums.size() != static_cast<size_t>(in_w) + 32) {
    scratch->column_sums.assign(in_w + 32, 0);  // padded: vector reads may run past in_w (zeros, never written)
  }
  const uint8_t* frame = scratch->frame.data();
  uint32_t* __restrict column_sums = scratch->column_sums.data();
  MaxGray(a, b, gray, scratch->frame.data(), scratch->frame.size());
  for (int o = 0; o < out_h; ++o) {
    // Rows first, vectorised along x.
    const int32_t* wy = rows_.weight.data() + o * row_taps;
    const uint8_t* src = frame + static_cast<size_t>(rows_.first[o]) * in_w;
    for (int x = 0; x < in_w; ++x) column_sums[x] = 0;
    for (int t = 0; t < row_taps; ++t) {
      const uint32_t w = static_cast<uint32_t>(wy[t]);
      const uint8_t* row = src + static_cast<size_t>(t) * in_w;
      for (int x = 0; x < in_w; ++x) column_sums[x] += w * row[x];
    }
    // Then columns (sums <= 255 * in_h * in_w < 2^24) and the exact division.
    uint8_t* dst = out + static_cast<size_t>(o) * out_w;
#if WORKBENCH_AVX512_RESIZE
    if (!chunks_.empty()) {
      ResizeColumnsAvx512(column_sums, dst);
      continue;
    }
#endif
    for (int j = 0; j < out_w; ++j) {
      const int32_t* wx = cols_.weight.data() + j * col_taps;
      const uint32_t* s = column_sums + cols_.first[j];
      uint32_t sum = 0;
      for (int t = 0; t < col_taps; ++t) sum += static_cast<uint32_t>(wx[t]) * s[t];
      dst[j] = RoundedQuotient(sum);
    }
  }
}

uint8_t FrameResizer::RoundedQuotient(uint32_t sum) const {
  // A float estimate of the quotient (off by at most one: sum < 2^24), then
  // exact integer corrections; the same steps as the vector path.
  const int32_t d = static_cast<int32_t>(divisor_), n = static_cast<int32_t>(sum);
  int32_t q = static_cast<int32_t>(static_cast<float>(n) * inverse_divisor_);
  int32_t r = n - q * d;
  if (r >= d) ++q, r -= d;
  if (r < 0) --q, r += d;
  if (2 * r > d || (2 * r == d && (q & 1))) ++q;
  return static_cast<uint8_t>(q);
}

#if WORKBENCH_AVX512_RESIZE
void FrameResizer::ResizeColumnsAvx512(const uint32_t* column_sums, uint8_t* dst) const {
  // 16 outputs per chunk read 32 consecutive sums (two registers) and pick
  // each tap's source with one two-register permute.
  const __m512i d = _mm512_set1_epi32(static_cast<int32_t>(divisor_));
  const __m512 inverse = _mm512_set1_ps(inverse_divisor_);
  const __m512i one = _mm512_set1_epi32(1), zero = _mm512_setzero_si512();
  const int taps = cols_.taps;
  for (size_t c = 0; c < chunks_.size(); ++c) {
    const Chunk& chunk = chunks_[c];
    const __m512i lo = _mm512_loadu_si512(column_sums + chunk.base);
    const __m512i hi = _mm512_loadu_si512(column_sums + chunk.base + 16);
    __m512i sum = zero;
    for (int t = 0; t < taps; ++t) {
      const __m512i picked = _mm512_permutex2var_epi32(lo, _mm512_loadu_si512(chunk.index + 16 * t), hi);
      sum = _mm512_add_epi32(sum, _mm512_mullo_epi32(picked, _mm512_loadu_si512(chunk.weight + 16 * t)));
    }
    // Float estimate of the quotient (off by at most one), corrected exactly.
    __m512i q = _mm512_cvttps_epi32(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), inverse));
    __m512i r = _mm512_sub_epi32(sum, _mm512_mullo_epi32(q, d));
    const __mmask16 over = _mm512_cmpge_epi32_mask(r, d), under = _mm512_cmplt_epi32_mask(r, zero);
    q = _mm512_mask_add_epi32(q, over, q, one);
    r = _mm512_mask_sub_epi32(r, over, r, d);
    q = _mm512_mask_sub_epi32(q, under, q, one);
    r = _mm512_mask_add_epi32(r, under, r, d);
    const __m512i twice = _mm512_add_epi32(r, r);
    const __mmask16 up =
        _mm512_cmpgt_epi32_mask(twice, d) | (_mm512_cmpeq_epi32_mask(twice, d) & _mm512_test_epi32_mask(q, one));
    q = _mm512_mask_add_epi32(q, up, q, one);
    _mm_mask_storeu_epi8(dst + 16 * c, chunk.lanes, _mm512_cvtepi32_epi8(q));
  }
}
#endif

}  // namespace workbench
