// CPU math of the population matmul ops.
//
// Members are grouped by slot (parent) so rows that share weights share their
// reads. The work is cut into tasks of (members, rows, columns) for the thread
// pool. Each task runs one of two kernels:
//   - a streaming kernel for a few rows (one observation per member: the
//     dense layers), bound by how fast the weights stream from memory;
//   - a register-blocked GEMM for many rows (convolutions, or many members
//     stacked on one shared slot), bound by arithmetic.
// bfloat16 weights are widened to float32 on the fly; sums are in float32.
// Bias, the low-rank perturbation and ReLU are fused into the epilogue.
// Convolutions run as per-member GEMMs over their patches, read in place from
// a zero-padded copy of the image (or built block by block in cache when the
// output width is not a multiple of 16): implicit im2col.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "population_matmul.h"

namespace workbench {
namespace {

constexpr int64_t kStreamMaxRows = 8;      // tasks with <= rows stream
constexpr int64_t kPerMemberMinRows = 16;  // members with >= rows: own GEMM
constexpr int64_t kStackMaxRows = 256;     // stacked rows in one task
constexpr int64_t kMinColumnChunk = 64;    // narrowest column split
constexpr int64_t kColumnAlign = 16;       // 64-byte float lines
constexpr int64_t kDepthBlock = 512;       // weight rows per GEMM pass
constexpr int64_t kTasksPerThread = 4;     // slack for load balance
constexpr int64_t kRowBlock = 128;         // rows per GEMM in per-member tasks

inline float LoadAsFloat(const float* p, int64_t i) { return p[i]; }
inline float LoadAsFloat(const Eigen::bfloat16* p, int64_t i) {
  // bfloat16 is the top half of a float32: widening is a 16-bit shift.
  const uint16_t raw = reinterpret_cast<const uint16_t*>(p)[i];
  return __builtin_bit_cast(float, static_cast<uint32_t>(raw) << 16);
}

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Weight rows consumed per step of the streaming kernel. Each column's sum is
// one chain of multiply-adds in row order, so more rows per step make longer
// chains: measured here with the paired bfloat16 loads below, 4 bfloat16 rows
// per step ran 8-15 % faster than 8 (the same bytes per step as float32's 4).
constexpr int64_t kStreamUnroll = 4;
// How far ahead of the current weight rows the streaming kernel prefetches
// (measured here: software prefetch adds ~20 % over the hardware prefetchers).
constexpr int64_t kPrefetchBytes = 8192;

typedef float Vec16 __attribute__((vector_size(64)));
typedef uint32_t Bits16 __attribute__((vector_size(64)));

// Columns of a bfloat16 row that the streaming kernel takes 32 at a time:
// one 64-byte load holds 32 weights, the even columns in the low halves of its
// 32-bit lanes and the odd ones in the high halves, so a shift and a mask widen
// them into two float vectors (two widening loads and two shifts otherwise).
// The sums of such a 32-column block are kept as [16 even | 16 odd] and put
// back in column order at the end. float32 rows take every column in order.
template <typename T>
inline int64_t PairedColumns(int64_t width) {
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) return width - width % 32;
  return 0;
}

// out[0:width] += sum_u a[u] * rows[u][0:width], one multiply-add per weight in
// the order of u (the same operations as the GEMM, so the same bits); columns
// [0, paired) in the paired layout above.
template <int64_t kRows, typename T>
inline void AccumulateRows(const T* const* rows, const float* a, float* out, int64_t width, int64_t paired) {
  if constexpr (std::is_same_v<T, Eigen::bfloat16>) {
    const Bits16 high = Bits16{} + 0xFFFF0000u;
    for (int64_t j = 0; j < paired; j += 32) {
      Vec16 even, odd;
      std::memcpy(&even, out + j, sizeof(Vec16));
      std::memcpy(&odd, out + j + 16, sizeof(Vec16));
      for (int64_t u = 0; u < kRows; ++u) {
        Bits16 raw;
        std::memcpy(&raw, rows[u] + j, sizeof(Bits16));
        even += a[u] * reinterpret_cast<Vec16>(raw << 16);
        odd += a[u] * reinterpret_cast<Vec16>(raw & high);
      }
      std::memcpy(out + j, &even, sizeof(Vec16));
      std::memcpy(out + j + 16, &odd, sizeof(Vec16));
    }
  }
  for (int64_t j = paired; j < width; ++j) {
    float sum = out[j];
    for (int64_t u = 0; u < kRows; ++u) sum += a[u] * LoadAsFloat(rows[u], j);
    out[j] = sum;
  }
}

// Puts the paired blocks of out[0:paired] back in column order.
inline void UnpairColumns(float* out, int64_t paired) {
  float block[32];
  for (int64_t j = 0; j < paired; j += 32) {
    for (int64_t e = 0; e < 16; ++e) {
      block[2 * e] = out[j + e];
      block[2 * e + 1] = out[j + 16 + e];
    }
    std::copy(block, block + 32, out + j);
  }
}

// acc[r, 0:width] = sum_k xrows[r][k] * w[k, 0:width] for a few rows r.
// Each weight row is read from memory once for all rows, and weight rows
// whose inputs are zero in every row are not read at all: the inputs of dense
// layers come out of a ReLU, and about half of them are zero. Skipping adds
// exact zeros only, so the sums are the same (for finite weights).
template <typename T>
void StreamRows(const float* const* xrows, int64_t num_rows, int64_t depth, const T* w, int64_t ldw, int64_t width,
                float* acc) {
  constexpr int64_t kUnroll = kStreamUnroll;
  const int64_t paired = PairedColumns<T>(width);
  std::fill(acc, acc + num_rows * width, 0.0f);
  thread_local std::vector<int64_t> active;  // k with a non-zero input
  active.clear();
  for (int64_t k = 0; k < depth; ++k) {
    bool any = false;
    for (int64_t r = 0; r < num_rows; ++r) any |= xrows[r][k] != 0.0f;
    if (any) active.push_back(k);
  }
  const int64_t count = static_cast<int64_t>(active.size());
  const int64_t ahead = std::max<int64_t>(kUnroll, CeilDiv(kPrefetchBytes, width * static_cast<int64_t>(sizeof(T))));
  int64_t i = 0;
  for (; i + kUnroll <= count; i += kUnroll) {
    for (int64_t u = 0; u < kUnroll && i + u + ahead < count; ++u) {
      const T* later = w + active[i + u + ahead] * ldw;
      for (int64_t j = 0; j < width; j += 64 / sizeof(T)) {
        __builtin_prefetch(later + j, 0, 1);
      }
    }
    const T* rows[kUnroll];
    for (int64_t u = 0; u < kUnroll; ++u) rows[u] = w + active[i + u] * ldw;
    for (int64_t r = 0; r < num_rows; ++r) {
      float a[kUnroll];
      for (int64_t u = 0; u < kUnroll; ++u) a[u] = xrows[r][active[i + u]];
      AccumulateRows<kUnroll>(rows, a, acc + r * width, width, paired);
    }
  }
  for (; i < count; ++i) {
    const T* row = w + active[i] * ldw;
    for (int64_t r = 0; r < num_rows; ++r) {
      const float a0 = xrows[r][active[i]];
      AccumulateRows<1>(&row, &a0, acc + r * width, width, paired);
    }
  }
  for (int64_t r = 0; r < num_rows && paired > 0; ++r) {
    UnpairColumns(acc + r * width, paired);
  }
}

// sum_k a[k] * b[k] with 16 independent partial sums (vectorisable without
// reassociating float math).
inline float Dot(const float* a, const float* b, int64_t n) {
  float partial[16] = {};
  int64_t k = 0;
  for (; k + 16 <= n; k += 16) {
    for (int i = 0; i < 16; ++i) partial[i] += a[k + i] * b[k + i];
  }
  float sum = 0.0f;
  for (; k < n; ++k) sum += a[k] * b[k];
  for (int i = 0; i < 16; ++i) sum += partial[i];
  return sum;
}

// Where a GEMM's left operand lies: row r's depth index k = s * span + j
// (segment s, j < span) is at x[r * ldx + s * segment_stride + j]. A plain
// matrix is one segment of the whole depth; a convolution's patches, read in
// place from a zero-padded image, are kernel_h segments (one kernel row each,
// kernel_w * channels contiguous floats), so no patch is copied.
struct RowLayout {
  int64_t ldx, segments, segment_stride, span;
  static RowLayout Matrix(int64_t ldx, int64_t depth) { return {ldx, 1, 0, depth}; }
};

// The GEMM tiles' vector: 16 floats with AVX-512, 8 without. GCC lowers a
// 64-byte vector on AVX2 to memory operations: a tile of them ran at 2-3
// GFLOP/s on an AVX2 machine, one of native 8-float vectors at ~30.
#ifdef __AVX512F__
typedef float GemmVec __attribute__((vector_size(64)));
#else
typedef float GemmVec __attribute__((vector_size(32)));
#endif
constexpr int64_t kGemmLanes = sizeof(GemmVec) / sizeof(float);

// Register-blocked float GEMM for the per-member tasks (convolutions):
// y[rows, width] = x[rows, depth] @ w[depth, width], w and y row-major with
// strides, x as `layout` says. A tile keeps kRows x (kGemmLanes * kVecs) sums in vector
// registers (24 AVX-512 registers for the shapes used) and reads x in place, so
// unlike a packing GEMM it needs no copy of the patches. Depth is summed in
// order, one multiply-add per step, whatever the layout: the same bits for
// patches read in place or copied. GCC vector extensions make the register
// blocking explicit (plain loops vectorised unreliably: 8 to 118 GFLOP/s for
// the same tile); measured here ~115 GFLOP/s per core, against ~95 for Eigen's
// GEMM. Without AVX-512 the vectors are AVX2's 8 floats and GemmStrips takes
// a tile that fits 16 registers.
template <int kRows, int kVecs>
inline void GemmTile(const float* x, const RowLayout& layout, const float* w, int64_t ldw, float* y, int64_t ldy,
                     bool accumulate) {
  GemmVec acc[kRows][kVecs];
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) {
      acc[r][v] = GemmVec{};
      if (accumulate) std::memcpy(&acc[r][v], y + r * ldy + kGemmLanes * v, sizeof(GemmVec));
    }
  }
  const int64_t ldx = layout.ldx;
  for (int64_t s = 0; s < layout.segments; ++s) {
    const float* xs = x + s * layout.segment_stride;
    const float* ws = w + s * layout.span * ldw;
    for (int64_t k = 0; k < layout.span; ++k) {
      GemmVec wk[kVecs];
      for (int v = 0; v < kVecs; ++v) {
        std::memcpy(&wk[v], ws + k * ldw + kGemmLanes * v, sizeof(GemmVec));
      }
      for (int r = 0; r < kRows; ++r) {
        const float a = xs[r * ldx + k];
        for (int v = 0; v < kVecs; ++v) acc[r][v] += a * wk[v];
      }
    }
  }
  for (int r = 0; r < kRows; ++r) {
    for (int v = 0; v < kVecs; ++v) {
      std::memcpy(y + r * ldy + kGemmLanes * v, &acc[r][v], sizeof(GemmVec));
    }
  }
}

// The last rows < kRows of a column strip, in one tile of exactly that many.
template <int kRows, int kVecs>
void GemmRemainderRows(int64_t rows, const float* x, const RowLayout& layout, const float* w, int64_t ldw, float* y,
                       int64_t ldy, bool accumulate) {
  if constexpr (kRows > 0) {
    if (rows == kRows) {
      GemmTile<kRows, kVecs>(x, layout, w, ldw, y, ldy, accumulate);
    } else {
      GemmRemainderRows<kRows - 1, kVecs>(rows, x, layout, w, ldw, y, ldy, accumulate);
    }
  }
}

template <int kRows, int kVecs>
void GemmColumns(const float* x, const RowLayout& layout, int64_t rows, const float* w, int64_t ldw, float* y,
                 int64_t ldy, bool accumulate) {
  int64_t r = 0;
  for (; r + kRows <= rows; r += kRows) {
    GemmTile<kRows, kVecs>(x + r * layout.ldx, layout, w, ldw, y + r * ldy, ldy, accumulate);
  }
  GemmRemainderRows<kRows - 1, kVecs>(rows - r, x + r * layout.ldx, layout, w, ldw, y + r * ldy, ldy, accumulate);
}

// y (=|+=) x @ w over the columns [0, width - width % 16), strip by strip;
// returns where the strips end.
int64_t GemmStrips(const float* x, const RowLayout& layout, int64_t rows, const float* w, int64_t ldw, int64_t width,
                   float* y, int64_t ldy, bool accumulate) {
  int64_t c = 0;
#ifdef __AVX512F__
  for (; c + 64 <= width; c += 64) {
    GemmColumns<6, 4>(x, layout, rows, w + c, ldw, y + c, ldy, accumulate);
  }
  if (c + 32 <= width) {
    GemmColumns<12, 2>(x, layout, rows, w + c, ldw, y + c, ldy, accumulate);
    c += 32;
  }
  if (c + 16 <= width) {
    GemmColumns<12, 1>(x, layout, rows, w + c, ldw, y + c, ldy, accumulate);
    c += 16;
  }
#else
  // 16 vector registers (AVX2): the tiles above would need 24 to 48 and spill.
  // 6 rows x 16 columns (two 8-float vectors) keep their 12 sums and the 2
  // weight vectors in registers. Each sum is the same chain in the same order:
  // the same bits as the AVX-512 tiles. (With the 64-byte vectors and tiles
  // of AVX-512 the op ran at 0.12-0.15 of its roofline here, below plain
  // TensorFlow.)
  for (; c + 16 <= width; c += 16) {
    GemmColumns<6, 2>(x, layout, rows, w + c, ldw, y + c, ldy, accumulate);
  }
#endif
  return c;
}

// y (=|+=) x @ w for one block of depth, column strip by column strip.
void TiledGemm(const float* x, int64_t ldx, int64_t rows, int64_t depth, const float* w, int64_t ldw, int64_t width,
               float* y, int64_t ldy, bool accumulate) {
  const int64_t c = GemmStrips(x, RowLayout::Matrix(ldx, depth), rows, w, ldw, width, y, ldy, accumulate);
  if (c == width) return;
  // Fewer than 16 columns left (logits, low-rank projections): dot products
  // against the transposed columns, vectorised along depth.
  const int64_t rest = width - c;
  thread_local std::vector<float> columns;
  columns.resize(rest * depth);
  for (int64_t k = 0; k < depth; ++k) {
    for (int64_t j = 0; j < rest; ++j) columns[j * depth + k] = w[k * ldw + c + j];
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < rest; ++j) {
      const float dot = Dot(x + r * ldx, columns.data() + j * depth, depth);
      y[r * ldy + c + j] = accumulate ? y[r * ldy + c + j] + dot : dot;
    }
  }
}

// Splits depth into equal blocks of at most kDepthBlock.
inline int64_t DepthBlock(int64_t depth) { return CeilDiv(depth, CeilDiv(depth, kDepthBlock)); }

// y[rows, width] = x[rows, depth] @ w[depth, width] (all with strides), in
// blocks of depth so the weights of a column strip stay in L2 while the row
// tiles pass over them.
void Gemm(const float* x, int64_t ldx, int64_t rows, int64_t depth, const float* w, int64_t ldw, int64_t width,
          float* y, int64_t ldy) {
  if (depth == 0) {
    for (int64_t r = 0; r < rows; ++r) std::fill(y + r * ldy, y + r * ldy + width, 0.0f);
    return;
  }
  const int64_t block = DepthBlock(depth);
  for (int64_t k0 = 0; k0 < depth; k0 += block) {
    const int64_t kb = std::min(block, depth - k0);
    TiledGemm(x + k0, ldx, rows, kb, w + k0 * ldw, ldw, width, y, ldy, k0 > 0);
  }
}

// Widens weight columns [0, width) of w (row stride ldw) into dense float
// rows (stride width); float weights are used in place.
const float* WeightsAsFloat(const float* w, int64_t ldw, int64_t, int64_t, std::vector<float>*, int64_t* ld_out) {
  *ld_out = ldw;
  return w;
}
const float* WeightsAsFloat(const Eigen::bfloat16* w, int64_t ldw, int64_t depth, int64_t width,
                            std::vector<float>* buffer, int64_t* ld_out) {
  buffer->resize(depth * width);
  for (int64_t k = 0; k < depth; ++k) {
    for (int64_t j = 0; j < width; ++j) {
      (*buffer)[k * width + j] = LoadAsFloat(w + k * ldw, j);
    }
  }
  *ld_out = width;
  return buffer->data();
}

// bfloat16 weights: widen a block of weight rows, then multiply the block.
void Gemm(const float* x, int64_t ldx, int64_t rows, int64_t depth, const Eigen::bfloat16* w, int64_t ldw,
          int64_t width, float* y, int64_t ldy) {
  if (depth == 0) {
    Gemm(x, ldx, rows, 0, static_cast<const float*>(nullptr), 0, width, y, ldy);
    return;
  }
  thread_local std::vector<float> widened;
  const int64_t block = DepthBlock(depth);
  for (int64_t k0 = 0; k0 < depth; k0 += block) {
    const int64_t kb = std::min(block, depth - k0);
    int64_t ld = 0;
    const float* wf = WeightsAsFloat(w + k0 * ldw, ldw, kb, width, &widened, &ld);
    TiledGemm(x + k0, ldx, rows, kb, wf, ld, width, y, ldy, k0 > 0);
  }
}

// Inline copy: the spans are short (tens of floats), too short for memcpy's call.
inline void CopyFloats(const float* src, int64_t n, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
}

// out[r - row_begin, :] = patch of output position r of `image`, for
// r in [row_begin, row_end).
void BuildPatches(const ConvGeometry& g, const float* image, int64_t row_begin, int64_t row_end, float* out) {
  const int64_t span = g.kernel_w * g.channels;  // one kernel row of a patch
  for (int64_t r = row_begin; r < row_end; ++r) {
    const int64_t top = (r / g.out_width) * g.stride_h - g.pad_top;
    const int64_t left = (r % g.out_width) * g.stride_w - g.pad_left;
    const bool inside_w = left >= 0 && left + g.kernel_w <= g.width;
    for (int64_t i = 0; i < g.kernel_h; ++i, out += span) {
      const int64_t row = top + i;
      if (row < 0 || row >= g.height) {
        std::fill(out, out + span, 0.0f);
        continue;
      }
      const float* src = image + (row * g.width + left) * g.channels;
      if (inside_w) {
        CopyFloats(src, span, out);
        continue;
      }
      for (int64_t j = 0; j < g.kernel_w; ++j) {
        float* dst = out + j * g.channels;
        const int64_t col = left + j;
        if (col < 0 || col >= g.width) {
          std::fill(dst, dst + g.channels, 0.0f);
        } else {
          CopyFloats(src + j * g.channels, g.channels, dst);
        }
      }
    }
  }
}

// A convolution whose output width is a multiple of 16 reads its patches in
// place (GemmStrips) from a zero-padded copy of the member's image: the padded
// image [padded_height, padded_width, channels] holds every pixel a patch
// touches, so every patch is kernel_h runs of kernel_w * channels floats. The
// copy is a fraction of the patches' size (conv1 of the Atari models: 31 K
// floats against 113 K), and the sums are the same bits as over built patches.
struct PaddedImage {
  int64_t height = 0, width = 0;  // padded rows and columns
  std::vector<float> pixels;

  // From a member's image: float pixels as they are, or uint8 ones times
  // `scale` (converted here, in the one copy the padding makes anyway).
  template <typename Pixel>
  void Fill(const ConvGeometry& g, const Pixel* image, float scale) {
    height = (g.out_height - 1) * g.stride_h + g.kernel_h;
    width = (g.out_width - 1) * g.stride_w + g.kernel_w;
    const int64_t c = g.channels;
    pixels.assign(height * width * c, 0.0f);
    // Image pixel (iy, ix) lands at (pad_top + iy, pad_left + ix); VALID
    // padding may leave the last rows and columns unread.
    const int64_t columns = std::min(g.width, width - g.pad_left);
    if (columns <= 0) return;
    for (int64_t py = 0; py < height; ++py) {
      const int64_t iy = py - g.pad_top;
      if (iy < 0 || iy >= g.height) continue;
      float* out = pixels.data() + (py * width + g.pad_left) * c;
      const Pixel* in = image + iy * g.width * c;
      if constexpr (std::is_same_v<Pixel, float>) {
        std::memcpy(out, in, sizeof(float) * columns * c);
      } else {
        for (int64_t i = 0; i < columns * c; ++i) {
          out[i] = static_cast<float>(in[i]) * scale;
        }
      }
    }
  }

  // The layout of output positions along one output row, and where the patch
  // of output position r begins.
  RowLayout Layout(const ConvGeometry& g) const {
    return {g.stride_w * g.channels, g.kernel_h, width * g.channels, g.kernel_w * g.channels};
  }
  const float* Patch(const ConvGeometry& g, int64_t r) const {
    const int64_t oy = r / g.out_width, ox = r % g.out_width;
    return pixels.data() + (oy * g.stride_h * width + ox * g.stride_w) * g.channels;
  }
};

// y[r - row_begin, 0:width] = patch(r) @ w for r in [row_begin, row_end),
// one output row's run of positions at a time (there the patches are evenly
// spaced); width is a multiple of 16.
void ConvGemm(const ConvGeometry& g, const PaddedImage& image, int64_t row_begin, int64_t row_end, const float* w,
              int64_t ldw, int64_t width, float* y, int64_t ldy) {
  const RowLayout layout = image.Layout(g);
  for (int64_t r = row_begin; r < row_end;) {
    const int64_t n = std::min(row_end - r, g.out_width - r % g.out_width);
    GemmStrips(image.Patch(g, r), layout, n, w, ldw, width, y + (r - row_begin) * ldy, ldy, false);
    r += n;
  }
}

// out[i * out_stride] = patches[i] . column for kRows patches at once (their
// sums are independent chains, which the core overlaps): per patch the
// operations of Dot over its kernel rows in turn (16 lane sums carried across
// kernel rows, the leftover products, then the lanes in order).
template <int kRows>
void ProjectPatches(const float* const* patches, const RowLayout& layout, const float* column, float* out,
                    int64_t out_stride) {
  Vec16 partial[kRows];
  float sum[kRows];
  for (int i = 0; i < kRows; ++i) partial[i] = Vec16{}, sum[i] = 0.0f;
  for (int64_t s = 0; s < layout.segments; ++s) {
    const float* b = column + s * layout.span;
    const int64_t offset = s * layout.segment_stride;
    int64_t k = 0;
    for (; k + 16 <= layout.span; k += 16) {
      Vec16 vb;
      std::memcpy(&vb, b + k, sizeof(Vec16));
      for (int i = 0; i < kRows; ++i) {
        Vec16 va;
        std::memcpy(&va, patches[i] + offset + k, sizeof(Vec16));
        partial[i] += va * vb;
      }
    }
    for (; k < layout.span; ++k) {
      for (int i = 0; i < kRows; ++i) sum[i] += patches[i][offset + k] * b[k];
    }
  }
  for (int lane = 0; lane < 16; ++lane) {
    for (int i = 0; i < kRows; ++i) sum[i] += partial[i][lane];
  }
  for (int i = 0; i < kRows; ++i) out[i * out_stride] = sum[i];
}

// out[r - row_begin, 0:rank] = patch(r) @ factor_a ([depth, rank]): the low-rank
// projection of each position.
void ConvProjection(const ConvGeometry& g, const PaddedImage& image, int64_t row_begin, int64_t row_end,
                    const float* factor_a, int64_t rank, float* out) {
  constexpr int kRows = 8;
  const RowLayout layout = image.Layout(g);
  const int64_t depth = layout.segments * layout.span;
  thread_local std::vector<float> columns;  // factor_a transposed: [rank, depth]
  columns.resize(rank * depth);
  for (int64_t k = 0; k < depth; ++k) {
    for (int64_t j = 0; j < rank; ++j) columns[j * depth + k] = factor_a[k * rank + j];
  }
  const float* patches[kRows];
  for (int64_t r = row_begin; r < row_end; r += kRows) {
    const int64_t n = std::min<int64_t>(kRows, row_end - r);
    for (int64_t i = 0; i < n; ++i) patches[i] = image.Patch(g, r + i);
    for (int64_t j = 0; j < rank; ++j) {
      float* o = out + (r - row_begin) * rank + j;
      const float* column = columns.data() + j * depth;
      if (n == kRows) {
        ProjectPatches<kRows>(patches, layout, column, o, rank);
      } else {
        for (int64_t i = 0; i < n; ++i) {
          ProjectPatches<1>(patches + i, layout, column, o + i * rank, rank);
        }
      }
    }
  }
}

// One unit of work: members order[order_begin:order_end] (all on one slot),
// their rows [row_begin, row_end), columns [col_begin, col_end).
struct Task {
  int64_t order_begin, order_end, row_begin, row_end, col_begin, col_end;
};

template <typename T>
class Plan {
 public:
  Plan(const PopulationMatmulProblem<T>& p, int num_threads)
      : p_(p), per_member_(p.conv.enabled || p.rows >= kPerMemberMinRows) {
    GroupBySlot();
    MakeTasks(kTasksPerThread * std::max(1, num_threads));
  }

  void Run(const ParallelFor& parallel_for) {
    if (!per_member_ && p_.sigmas != nullptr && p_.rank > 0) {
      // u[b] = x[b] @ factor_a[b]: the rank-R projection of each member
      // (per-member tasks project their own rows).
      lowrank_u_.resize(p_.batch * p_.rows * p_.rank);
      parallel_for(p_.batch, [&](int64_t begin, int64_t end) {
        for (int64_t b = begin; b < end; ++b) {
          Gemm(p_.x + b * p_.rows * p_.depth, p_.depth, p_.rows, p_.depth, p_.factor_a + b * p_.depth * p_.rank,
               p_.rank, p_.rank, lowrank_u_.data() + b * p_.rows * p_.rank, p_.rank);
        }
      });
    }
    if (needs_gather_) {
      // Stack the rows of members that share a slot so one GEMM serves all.
      const int64_t member_size = p_.rows * p_.depth;
      gathered_.resize(p_.batch * member_size);
      parallel_for(p_.batch, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          std::memcpy(gathered_.data() + i * member_size, p_.x + order_[i] * member_size, sizeof(float) * member_size);
        }
      });
    }
    parallel_for(static_cast<int64_t>(tasks_.size()), [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) RunTask(tasks_[t]);
    });
  }

 private:
  // Stable counting sort of members by slot.
  void GroupBySlot() {
    std::vector<int64_t> start(p_.num_slots + 1, 0);
    for (int64_t b = 0; b < p_.batch; ++b) ++start[p_.slots[b] + 1];
    for (int64_t s = 0; s < p_.num_slots; ++s) {
      if (start[s + 1] > 0) groups_.push_back({start[s], start[s + 1]});
      start[s + 1] += start[s];
    }
    for (auto& group : groups_) group.second += group.first;
    order_.resize(p_.batch);
    std::vector<int64_t> next(start.begin(), start.end() - 1);
    for (int64_t b = 0; b < p_.batch; ++b) order_[next[p_.slots[b]]++] = b;
  }

  void MakeTasks(int64_t target_tasks) {
    std::vector<Task> row_tasks;
    if (per_member_) {
      const int64_t splits = CeilDiv(target_tasks, p_.batch);
      const int64_t row_block = std::max(kPerMemberMinRows, CeilDiv(p_.rows, splits));
      for (int64_t i = 0; i < p_.batch; ++i) {
        for (int64_t r = 0; r < p_.rows; r += row_block) {
          row_tasks.push_back({i, i + 1, r, std::min(p_.rows, r + row_block), 0, p_.cols});
        }
      }
    } else {
      const int64_t members_per_task = std::max<int64_t>(1, kStackMaxRows / p_.rows);
      for (const auto& group : groups_) {
        for (int64_t i = group.first; i < group.second; i += members_per_task) {
          const int64_t end = std::min(group.second, i + members_per_task);
          if (end - i > 1 && (end - i) * p_.rows > kStreamMaxRows) {
            needs_gather_ = true;
          }
          row_tasks.push_back({i, end, 0, p_.rows, 0, p_.cols});
        }
      }
    }
    // Too few tasks to keep every thread busy: split the columns as well.
    const int64_t column_chunks = std::min(CeilDiv(target_tasks, static_cast<int64_t>(row_tasks.size())),
                                           std::max<int64_t>(1, p_.cols / kMinColumnChunk));
    if (column_chunks <= 1) {
      tasks_ = std::move(row_tasks);
      return;
    }
    const int64_t chunk = CeilDiv(CeilDiv(p_.cols, column_chunks), kColumnAlign) * kColumnAlign;
    for (const Task& task : row_tasks) {
      for (int64_t c = 0; c < p_.cols; c += chunk) {
        Task split = task;
        split.col_begin = c;
        split.col_end = std::min(p_.cols, c + chunk);
        tasks_.push_back(split);
      }
    }
  }

  void RunTask(const Task& t) {
    const int64_t first = order_[t.order_begin];
    const int64_t width = t.col_end - t.col_begin;
    const T* w = p_.weights + p_.slots[first] * p_.depth * p_.cols + t.col_begin;
    if (per_member_) {
      RunMemberRows(first, w, width, t);
      return;
    }
    const int64_t members = t.order_end - t.order_begin;
    const int64_t total_rows = members * p_.rows;
    thread_local std::vector<float> acc;
    acc.resize(total_rows * width);
    if (total_rows <= kStreamMaxRows) {
      const float* xrows[kStreamMaxRows];
      for (int64_t i = 0; i < members; ++i) {
        for (int64_t r = 0; r < p_.rows; ++r) {
          xrows[i * p_.rows + r] = p_.x + (order_[t.order_begin + i] * p_.rows + r) * p_.depth;
        }
      }
      StreamRows(xrows, total_rows, p_.depth, w, p_.cols, width, acc.data());
    } else {
      const float* x =
          members == 1 ? p_.x + first * p_.rows * p_.depth : gathered_.data() + t.order_begin * p_.rows * p_.depth;
      // Full 16-column strips in the GEMM; the last < 16 columns in the
      // streaming kernel. Both sum over depth in order with one rounding per
      // step, so a row gets the same bits here as in a streaming task: how
      // members are grouped never changes their results.
      const int64_t strips = width - width % 16;
      Gemm(x, p_.depth, total_rows, p_.depth, w, p_.cols, strips, acc.data(), width);
      if (strips < width) {
        const int64_t rest = width - strips;
        thread_local std::vector<float> tail;
        tail.resize(kStreamMaxRows * rest);
        for (int64_t r0 = 0; r0 < total_rows; r0 += kStreamMaxRows) {
          const int64_t n = std::min(kStreamMaxRows, total_rows - r0);
          const float* rows[kStreamMaxRows];
          for (int64_t i = 0; i < n; ++i) rows[i] = x + (r0 + i) * p_.depth;
          StreamRows(rows, n, p_.depth, w + strips, p_.cols, rest, tail.data());
          for (int64_t i = 0; i < n; ++i) {
            std::copy(tail.data() + i * rest, tail.data() + (i + 1) * rest, acc.data() + (r0 + i) * width + strips);
          }
        }
      }
    }
    for (int64_t i = 0; i < members; ++i) {
      for (int64_t r = 0; r < p_.rows; ++r) {
        const int64_t member = order_[t.order_begin + i];
        const float* u = lowrank_u_.empty() ? nullptr : lowrank_u_.data() + (member * p_.rows + r) * p_.rank;
        FinishRow(member, r, acc.data() + (i * p_.rows + r) * width, u, t);
      }
    }
  }

  // Member b's image [height, width, channels] as floats: in place, or
  // uint8 pixels times x_scale in `buffer`.
  const float* MemberImage(int64_t member, std::vector<float>* buffer) const {
    const ConvGeometry& g = p_.conv;
    const int64_t size = g.height * g.width * g.channels;
    if (p_.x_uint8 == nullptr) return p_.x + member * size;
    buffer->resize(size);
    const uint8_t* pixels = p_.x_uint8 + member * size;
    for (int64_t i = 0; i < size; ++i) {
      (*buffer)[i] = static_cast<float>(pixels[i]) * p_.x_scale;
    }
    return buffer->data();
  }

  // Rows of one member (a row block at a time): GEMM straight into y, where
  // the member's rows are contiguous; conv rows are patches read in place from
  // the padded image, or built in cache.
  void RunMemberRows(int64_t member, const T* w, int64_t width, const Task& t) {
    thread_local std::vector<float> patches, projected, widened, converted;
    thread_local PaddedImage padded;
    const bool lowrank = p_.sigmas != nullptr && p_.rank > 0;
    int64_t ldw = 0;
    const float* wf = WeightsAsFloat(w, p_.cols, p_.depth, width, &widened, &ldw);
    // Patches read in place when every column strip is a full 16 wide (the
    // column chunks are multiples of 16 then); otherwise built block by block.
    const bool in_place = p_.conv.enabled && p_.cols % 16 == 0;
    const ConvGeometry& g = p_.conv;
    const float* image = nullptr;  // the member's float image (built patches)
    if (in_place) {
      const int64_t offset = member * g.height * g.width * g.channels;
      if (p_.x_uint8 != nullptr) {
        padded.Fill(g, p_.x_uint8 + offset, p_.x_scale);
      } else {
        padded.Fill(g, p_.x + offset, 1.0f);
      }
    } else if (g.enabled) {
      image = MemberImage(member, &converted);
    }
    for (int64_t r0 = t.row_begin; r0 < t.row_end; r0 += kRowBlock) {
      const int64_t n = std::min(kRowBlock, t.row_end - r0);
      float* out = p_.y + (member * p_.rows + r0) * p_.cols + t.col_begin;
      if (in_place) {
        ConvGemm(g, padded, r0, r0 + n, wf, ldw, width, out, p_.cols);
        if (lowrank) {
          projected.resize(n * p_.rank);
          ConvProjection(g, padded, r0, r0 + n, p_.factor_a + member * p_.depth * p_.rank, p_.rank, projected.data());
        }
        FinishRows(member, r0, n, out, lowrank ? projected.data() : nullptr, t);
        continue;
      }
      const float* x = nullptr;
      if (g.enabled) {
        patches.resize(n * p_.depth);
        BuildPatches(g, image, r0, r0 + n, patches.data());
        x = patches.data();
      } else {
        x = p_.x + (member * p_.rows + r0) * p_.depth;
      }
      Gemm(x, p_.depth, n, p_.depth, wf, ldw, width, out, p_.cols);
      if (lowrank) {
        projected.resize(n * p_.rank);
        Gemm(x, p_.depth, n, p_.depth, p_.factor_a + member * p_.depth * p_.rank, p_.rank, p_.rank, projected.data(),
             p_.rank);
      }
      FinishRows(member, r0, n, out, lowrank ? projected.data() : nullptr, t);
    }
  }

  // FinishRow for n rows from r0 whose sums are in place in y (out: row r0's
  // first column of the task); u: their projections [n, rank] or nullptr.
  void FinishRows(int64_t member, int64_t r0, int64_t n, const float* out, const float* u, const Task& t) {
    for (int64_t r = 0; r < n; ++r) {
      FinishRow(member, r0 + r, out + r * p_.cols, u ? u + r * p_.rank : nullptr, t);
    }
  }

  // y[member, row, cols] = act(acc + bias + perturbation), for the task's
  // columns. `acc` may alias the output; `u` is the row's low-rank
  // projection x @ factor_a (nullptr without perturbation).
  void FinishRow(int64_t member, int64_t row, const float* acc, const float* u, const Task& t) {
    float* out = p_.y + (member * p_.rows + row) * p_.cols;
    const int64_t c0 = t.col_begin, c1 = t.col_end;
    if (acc != out + c0) std::copy(acc, acc + (c1 - c0), out + c0);
    if (p_.bias) {
      const T* bias = p_.bias + p_.slots[member] * p_.cols;
      for (int64_t c = c0; c < c1; ++c) out[c] += LoadAsFloat(bias, c);
    }
    const float sigma = p_.sigmas ? p_.sigmas[member] : 0.0f;
    if (p_.bias_noise) {
      const float* noise = p_.bias_noise + member * p_.cols;
      for (int64_t c = c0; c < c1; ++c) out[c] += sigma * noise[c];
    }
    if (u) {
      const float* factor_b = p_.factor_b + member * p_.cols * p_.rank;
      for (int64_t r = 0; r < p_.rank; ++r) {
        const float scale = sigma * u[r];
        if (p_.rank == 1) {  // contiguous: vectorised
          for (int64_t c = c0; c < c1; ++c) out[c] += scale * factor_b[c];
        } else {
          for (int64_t c = c0; c < c1; ++c) out[c] += scale * factor_b[c * p_.rank + r];
        }
      }
    }
    if (p_.relu) {
      for (int64_t c = c0; c < c1; ++c) out[c] = std::max(out[c], 0.0f);
    }
  }

  const PopulationMatmulProblem<T>& p_;
  const bool per_member_;
  bool needs_gather_ = false;
  std::vector<int64_t> order_;                       // members sorted by slot
  std::vector<std::pair<int64_t, int64_t>> groups_;  // [begin, end) in order_
  std::vector<Task> tasks_;
  std::vector<float> gathered_;   // x rows in order_ (only if needs_gather_)
  std::vector<float> lowrank_u_;  // [batch, rows, rank], stacked tasks only
};

}  // namespace

template <typename T>
void RunPopulationMatmul(const PopulationMatmulProblem<T>& problem, int num_threads, const ParallelFor& parallel_for) {
  if (problem.batch == 0 || problem.rows == 0 || problem.cols == 0) return;
  Plan<T> plan(problem, num_threads);
  plan.Run(parallel_for);
}

template void RunPopulationMatmul<float>(const PopulationMatmulProblem<float>&, int, const ParallelFor&);
template void RunPopulationMatmul<Eigen::bfloat16>(const PopulationMatmulProblem<Eigen::bfloat16>&, int,
                                                   const ParallelFor&);

}  // namespace workbench
