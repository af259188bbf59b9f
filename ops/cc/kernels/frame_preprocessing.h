// Atari frame preprocessing shared by every emulator of a batch: grayscale
// through the console palette, the max of two frames, an exact area resize.
//
// The resize is OpenCV's INTER_AREA rule (each output pixel is the mean of the
// source area it covers, partial pixels weighted by their covered fraction),
// computed in integers so that it is exact and reproducible bit for bit by the
// numpy reference (workbench/envs/preprocessing.py): in units of 1/out_h of a
// source row, source row y covers [y*out_h, (y+1)*out_h) and output row i
// covers [i*in_h, (i+1)*in_h); their overlaps are integer weights summing to
// in_h per output row (likewise for columns), and the weighted sum is divided
// by in_h*in_w with round-half-to-even.
#ifndef WORKBENCH_OPS_KERNELS_FRAME_PREPROCESSING_H_
#define WORKBENCH_OPS_KERNELS_FRAME_PREPROCESSING_H_

#include <cstdint>
#include <vector>

#if defined(__AVX512F__) && defined(__AVX512BW__)
#define WORKBENCH_AVX512_RESIZE 1
#else
#define WORKBENCH_AVX512_RESIZE 0
#endif

namespace workbench {

// Integer area weights of one axis: output o takes source elements
// [first[o], first[o] + taps) with weights weight[o * taps + t] (zero-padded).
struct AreaAxis {
  int in_size = 0;
  int out_size = 0;
  int taps = 0;
  std::vector<int> first;
  std::vector<int32_t> weight;
};

AreaAxis MakeAreaAxis(int in_size, int out_size);

class FrameResizer {
 public:
  FrameResizer(int in_h, int in_w, int out_h, int out_w);

  // Buffers reused between calls (one per emulator: no allocation per step).
  struct Scratch {
    std::vector<uint8_t> frame;         // [in_h * in_w] max grayscale
    std::vector<uint32_t> column_sums;  // [in_w + 32] one output row, columns not yet resized
  };

  // out[out_h*out_w] = area-resize(max(gray[a], gray[b])) where a and b are
  // [in_h*in_w] palette-index screens and gray a 256-entry lookup table.
  void MaxAndResize(const uint8_t* a, const uint8_t* b, const uint8_t* gray, uint8_t* out, Scratch* scratch) const;

  int in_h() const { return rows_.in_size; }
  int in_w() const { return cols_.in_size; }
  int out_h() const { return rows_.out_size; }
  int out_w() const { return cols_.out_size; }

 private:
  // round-half-to-even(sum / (in_h*in_w)).
  uint8_t RoundedQuotient(uint32_t sum) const;
#if WORKBENCH_AVX512_RESIZE
  struct Chunk {             // 16 outputs of the column pass
    int base;                // first source sum read
    int32_t index[3 * 16];   // [tap][lane]: source - base, < 32
    int32_t weight[3 * 16];  // [tap][lane]
    uint16_t lanes;          // mask of the lanes that are outputs
  };
  void ResizeColumnsAvx512(const uint32_t* column_sums, uint8_t* dst) const;
  std::vector<Chunk> chunks_;  // empty: the scalar column pass runs
#endif

  AreaAxis rows_;
  AreaAxis cols_;
  uint32_t divisor_;  // in_h * in_w
  float inverse_divisor_;
};

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_FRAME_PREPROCESSING_H_
