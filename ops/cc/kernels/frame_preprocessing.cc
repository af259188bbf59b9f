// Exact integer area resize (see frame_preprocessing.h for the rule).
#include "frame_preprocessing.h"

#include <algorithm>

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
      divisor_(static_cast<uint32_t>(in_h * in_w)) {
  // floor(s / d) == (s * ceil(2^shift / d)) >> shift for all s < 2^24 when
  // 2^shift >= 2^24 * d (the error term stays below 1 / d).
  int log2_d = 0;
  while ((uint64_t{1} << log2_d) < divisor_) ++log2_d;
  shift_ = 24 + log2_d;
  magic_ = ((uint64_t{1} << shift_) + divisor_ - 1) / divisor_;
}

uint8_t FrameResizer::RoundedQuotient(uint32_t sum) const {
  uint32_t q = static_cast<uint32_t>((sum * magic_) >> shift_);
  const uint32_t twice_remainder = 2 * (sum - q * divisor_);
  if (twice_remainder > divisor_ || (twice_remainder == divisor_ && (q & 1))) ++q;
  return static_cast<uint8_t>(q);
}

void FrameResizer::MaxAndResize(const uint8_t* a, const uint8_t* b, const uint8_t* gray, uint8_t* out,
                                std::vector<uint16_t>* scratch) const {
  const int in_h = rows_.in_size, in_w = cols_.in_size;
  const int out_h = rows_.out_size, out_w = cols_.out_size;
  const int row_taps = rows_.taps, col_taps = cols_.taps;
  // Layout of scratch: the max grayscale frame [in_h*in_w] (as uint16 for the
  // vector loop), then one row of column sums [in_w].
  scratch->resize(static_cast<size_t>(in_h + 1) * in_w);
  uint16_t* frame = scratch->data();
  uint16_t* column_sums = frame + static_cast<size_t>(in_h) * in_w;
  const size_t pixels = static_cast<size_t>(in_h) * in_w;
  for (size_t p = 0; p < pixels; ++p) frame[p] = std::max(gray[a[p]], gray[b[p]]);
  for (int o = 0; o < out_h; ++o) {
    // Rows first, vectorised along x: sums <= 255 * in_h fit in uint16.
    const int32_t* wy = rows_.weight.data() + o * row_taps;
    const uint16_t* src = frame + static_cast<size_t>(rows_.first[o]) * in_w;
    for (int x = 0; x < in_w; ++x) column_sums[x] = 0;
    for (int t = 0; t < row_taps; ++t) {
      const uint16_t w = static_cast<uint16_t>(wy[t]);
      const uint16_t* row = src + static_cast<size_t>(t) * in_w;
      for (int x = 0; x < in_w; ++x) column_sums[x] += w * row[x];
    }
    // Then columns: sums <= 255 * in_h * in_w < 2^24.
    uint8_t* dst = out + static_cast<size_t>(o) * out_w;
    for (int j = 0; j < out_w; ++j) {
      const int32_t* wx = cols_.weight.data() + j * col_taps;
      const uint16_t* s = column_sums + cols_.first[j];
      uint32_t sum = 0;
      for (int t = 0; t < col_taps; ++t) sum += static_cast<uint32_t>(wx[t]) * s[t];
      dst[j] = RoundedQuotient(sum);
    }
  }
}

}  // namespace workbench
