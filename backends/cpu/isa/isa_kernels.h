// The tables of hot kernels that backends/cpu/isa/*.cpp define once per ISA level
// (cmake/MinferIsa.cmake compiles each of those sources once per level, in the namespace
// minfer::cpu::isa_<level>). Only declarations and plain structs here: this header is
// included by code built for every level, so it must hold no code the linker could merge
// across them.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::cpu {
enum class Isa;         // backends/cpu/isa.h (left out here: it pulls in <string>)
struct DepthwisePlane;     // backends/cpu/depthwise.h
struct DepthwiseChannels;  // backends/cpu/depthwise_channels.h
struct DepthwiseNhwc;      // backends/cpu/depthwise_channels.h
struct Activation;         // backends/cpu/epilogue.h
}

namespace minfer::cpu::q8 {

// A micro-tile's activations: row r's lanes (4 bytes each, in the packed format) are `runs`
// runs of `run_lanes` lanes, run s at a + r * a_stride + s * run_step. A packed im2col row is
// one run of kq lanes; in an implicit-GEMM conv each kernel row's taps are one run, read in
// place from a padded copy of the input (a_stride: the pixels' stride, run_step: its rows').
struct TileRows {
  const uint8_t* a;
  int64_t a_stride, run_step, runs, run_lanes;
  // Cache lines to ask into L2 as the tile goes, one per step from its first (the next weight
  // block, coming from memory): prefetch_lines lines from prefetch.
  const uint8_t* prefetch = nullptr;
  int64_t prefetch_lines = 0;
  // The weights' lanes per run, where a run reads only the first run_lanes of them (an edge
  // pixel's taps inside the image, its kernel rows' others skipped); 0: run_lanes.
  int64_t weight_lanes = 0;
  // The rows are the signed int8 activations themselves, not packed (one run; where
  // MicroKernels::signed_rows): the tile flips each lane's sign bits (x ^ 0x80) as it
  // broadcasts the lane.
  bool signed_rows = false;
  // Groups side by side in the channels (the narrow tile only; 1, 2 or 4): each step of a row
  // is `interleave` lanes, one per group, broadcast in turn across the vector, so that the
  // weights' channel lane j takes group j % interleave's (run_lanes and weight_lanes count
  // steps); C's sums come out in the groups' channel order (group after group).
  int interleave = 1;
};
// C[r * nr + j] = init[j] + sum over the lanes of row r (r < rows <= mr) times the packed
// weight block b (runs * run_lanes lanes x nr channels x 4 bytes).
using MicroKernel = void (*)(const TileRows& a, const uint8_t* b, int rows, const int32_t* init,
                             int32_t* c);
// Packs `runs` runs of n int8 activations, the i-th from x + i * step, into a packed row's
// elements (4 / kstep bytes each) from the element at `out`, one after another: runs of an
// im2col row (a kernel row's taps each), written straight into the GEMM's operand.
using PackRuns = void (*)(const int8_t* x, int64_t step, int64_t runs, int64_t n, uint8_t* out);
// Packs n copies of one activation (the zero point of a padded tap) likewise.
using FillRun = void (*)(int8_t x, int64_t n, uint8_t* out);

// The int8 GEMM core of one ISA level (backends/cpu/isa/qgemm_micro.cpp).
struct MicroKernels {
  Isa isa;
  int mr;            // rows (output pixels) per micro-tile
  int nr;            // output channels per micro-tile and per packed weight block
  int kstep;         // k values per 32-bit lane: 2 (int16 pairs, vpmaddwd) or 4 (vpdpbusd)
  int kq_align;      // the lanes of a row are a multiple of this (16: whole AMX tiles, else 1;
                     // AMX's micro reads one run per row)
  int32_t a_offset;  // added to every packed activation: 0 (int16) or 128 (x ^ 0x80, u8)
  bool signed_rows;  // micro and narrow read TileRows::signed_rows (the VNNI levels but AMX)
  MicroKernel micro;
  // The same for a block's first nr / 2 channels only (C's rows keep their stride of nr), in
  // tiles of narrow_mr rows: where a layer's last block has no more channels (16 of 32 on the
  // 512-bit levels), the full tile would spend half its products on the block's zero padding.
  // Null (narrow_mr 0) on AMX.
  int narrow_mr;
  MicroKernel narrow;
  PackRuns pack_runs;
  FillRun fill_run;
  // Readies the calling thread for micro (amx: loads the tile configuration), to call before
  // a run of micro calls with no other AMX code between them; null where nothing is needed.
  void (*begin)();
};

// The requantizing output stage's parameters (backends/cpu/int8/requant.h): per channel (read
// a whole vector at a time: padded by 32), then the scalars.
struct RequantParams {
  const int32_t *m, *rnd, *shift;  // the multiplier and its rounding right shift
  const int32_t *lo, *hi, *pre;    // the clamp before a left shift by pre
  bool pre_shift;                  // some channel has pre > 0 (else lo, hi, pre do nothing)
  const int32_t* rnd_zp;           // rnd + zero_point * 2^shift, if zero_point_in_rnd
  bool zero_point_in_rnd;
  int32_t zero_point, qmin, qmax;
  bool residual;
  int32_t ma, mb, k, z_zero_point, y_zero_point, y_min, y_max;
  // The residual's t * ma + z * mb + residual_start is (t - zero_point) * ma + (z - z_zero_point)
  // * mb + 2^(k-1), plus y_zero_point * 2^k if y_zero_point_in_sum (then no add after the shift).
  int32_t residual_start;
  bool y_zero_point_in_sum;
};
// A tile of `rows` rows x output channels [c0, c0 + cols): acc[r * acc_stride + i] is row r,
// channel c0 + i; the int8 outputs go to y + r * y_stride + i. z: the residual (laid out as
// y), or null.
using RequantTile = void (*)(const RequantParams& rq, const int32_t* acc, int64_t acc_stride,
                             int rows, int64_t c0, int64_t cols, int8_t* y, int64_t y_stride,
                             const int8_t* z);

// A tile's float output (laid out as RequantTile's): y = float(acc) * scale[c0 + i], then
// max(y, +0) with relu; scale is padded by 32. y may be acc itself.
using DequantTile = void (*)(const float* scale, bool relu, const int32_t* acc,
                             int64_t acc_stride, int rows, int64_t c0, int64_t cols, float* y,
                             int64_t y_stride);

// The output stage of one ISA level (backends/cpu/isa/requant_tile.cpp).
struct RequantKernels {
  Isa isa;
  RequantTile tile;
  DequantTile dequant;
};

// ONNX QuantizeLinear of n floats to int8 (or uint8: to_u8) of one ISA level (backends/cpu/isa/
// quantize_floats.cpp), equal to int8::quantize_value.
struct QuantizeKernels {
  Isa isa;
  void (*floats)(const float* x, int64_t n, float scale, int32_t zero_point, bool to_u8,
                 void* out);
  // com.minfer:GatedQuantize: rows of `channels` floats, each times its channel's gate, to int8.
  void (*gated)(const float* x, int64_t rows, int64_t channels, const float* gate, float scale,
                int32_t zero_point, void* out);
  // com.minfer:QGlobalAveragePool on floats: acc[c] += the int8 values of channel c of `pixels`
  // rows of `channels` floats (the int8 tensor never stored).
  void (*sum)(const float* x, int64_t pixels, int64_t channels, float scale, int32_t zero_point,
              int32_t* acc);
};

// A run of `pixels` output pixels of an int8 depthwise conv (NHWC; backends/cpu/int8/
// qdepthwise_kernel.h): pixel p's tap (ky, kx) reads its channels at rows[ky] + p * pixel_step +
// kx * tap_step, and acc[p * channels + c] = init[c] + sum over the taps of x * w[tap][c] (the
// input's zero point is folded into init). w holds each weight in the low 16 bits of an int32,
// the high ones 0; w and init are padded by a vector past `channels`.
struct DepthwiseRun {
  const int8_t* const* rows;
  int64_t kernel_rows, row_taps;
  int64_t tap_step, pixel_step;  // bytes
  int64_t pixels, channels;
  const int32_t* w;
  const int32_t* init;
  int32_t* acc;
};
// The int8 depthwise sums of one ISA level (backends/cpu/isa/qdepthwise_sums.cpp).
struct DepthwiseKernels {
  Isa isa;
  void (*sums)(const DepthwiseRun&);
};

// The int8 depthwise sums on group rows (backends/cpu/isa/qdepthwise_groups.cpp): each 32-bit
// lane of a group row holds one channel of `group` neighbouring pixels of an input row, 4 as u8
// (x + 128) for vpdpbusd on the VNNI levels, 2 as int16 for vpmaddwd on the others, so that
// one instruction sums up to `group` taps of a kernel row. Group g, channel c of a row padded
// on the left lies at lane g * channels_padded + c. A tile's first pixel p0 reads from padded
// column stride * p0, a multiple of the group (group g0); pixel i's taps lie in its groups
// group_first .. group_last (counted from g0), each (pixel, group) one instruction whose
// weights are the kernel row's taps shifted: element e is tap group * j + e - stride * i, or 0.
constexpr int group_first(int group, int stride, int i) { return stride * i / group; }
constexpr int group_last(int group, int stride, int kernel_w, int i) {
  return (stride * i + kernel_w - 1) / group;
}
// The 32-bit lanes of a kernel row's taps: `group` taps each, zeros past the last.
constexpr int group_tap_dwords(int group, int kernel_w) { return (kernel_w + group - 1) / group; }
// acc[p * channels_padded + c] = init[c] + the taps' sums of pixel p < pixels (a multiple of
// the group) for c in [c0, c1) (multiples of 16, c1 <= channels_padded; the channels past the
// layer's hold 0 weights). taps: [kernel row][dword][channels_padded].
struct DepthwiseGroupRun {
  const uint8_t* const* rows;  // per kernel row, its group row
  int64_t kernel_rows, kernel_w, stride;
  int64_t pixels, channels_padded, c0, c1;
  const int32_t* taps;
  const int32_t* init;
  int32_t* acc;
};
struct DepthwiseGroupKernels {
  Isa isa;
  int group;         // pixels a lane: 4 (VNNI levels) or 2
  int input_offset;  // what the group rows add to each input: 128 (u8) or 0
  bool (*supports)(int64_t kernel_w, int64_t stride);
  void (*sums)(const DepthwiseGroupRun&);
  // The group row of an NHWC row of `width` pixels of `channels`, padded by pad_left pixels on
  // the left and past its right end (to `groups` groups) with zero_pixel's channels.
  void (*to_groups)(const int8_t* row, int64_t width, int64_t pad_left, const int8_t* zero_pixel,
                    int64_t channels, int64_t channels_padded, int64_t groups, uint8_t* out);
};

}  // namespace minfer::cpu::q8

namespace minfer::cpu::f32 {

// The output of a row panel of ConvGemm: rows x cols of Y with the epilogue's inputs at its
// corner.
struct ConvTileOut {
  const float* bias;  // null = none; one per row
  const float* z;     // null = none; row stride ldy like y
  float* y;
  int64_t ldy;
  int64_t rows, cols;  // rows <= mr; any number of columns
};
// Y = clamp?(W panel (k steps of mr floats) * X + bias + z) over o.cols columns, in tiles of nr
// columns: tile t reads X [k, <= nr] at x + t * x_step, row s at ldx * s past it, or at
// x_rows[s] past it where x_rows is not null (an implicit GEMM's rows of taps). X and Y are read
// and written only within o.cols columns. With prefetch, each tile also asks for the next panel
// of W (the k * mr floats after this one) to be brought into L2 as it goes.
using ConvRows = void (*)(int64_t k, const float* wp, const float* x, int64_t ldx,
                          const int64_t* x_rows, int64_t x_step, const ConvTileOut& o, bool clamp,
                          float lo, float hi, bool prefetch);
// C tile [rows <= rhs_rows, cols <= nr] (= when first, += otherwise; + bias[j] when bias) =
// A's rows (row r at a + r * lda, read in place) times kc steps of packed B: per step 16
// floats at bp for columns 0..15 and, on 16-lane levels, 16 at bp + next_panel for columns
// 16..31 (the 16-column panels of PackedRhs, two at a time); bp advances 16 floats per step.
// clamp: null, or {lo, hi} to clamp the sums to (after the bias; a NaN stays NaN, as Clip's).
// ahead: the first tile to read these steps of B (from memory) asks for later ones as it goes.
using RhsTile = void (*)(int64_t kc, const float* a, int64_t lda, const float* bp,
                         int64_t next_panel, float* c, int64_t ldc, int64_t rows, int64_t cols,
                         bool first, const float* bias, const float* clamp, bool ahead);

// PackedRhs's tall tile, on 32-register levels: C [rows <= kTallRows, cols <= 16] (= or +=,
// bias and clamp as RhsTile's) = A's rows times kc steps of one 16-column panel at bp. Each
// step of B serves every row, so B is read once however many rows there are (RhsTile reads it
// once per 6 rows), at an even pace, and asked for ahead of use (it comes from memory: the
// weights of a 7x7 plane's F(2x2, 3x3) products are used by 16 rows each).
inline constexpr int kTallRows = 16;
using RhsTall = void (*)(int64_t kc, const float* a, int64_t lda, const float* bp, float* c,
                         int64_t ldc, int64_t rows, int64_t cols, bool first, const float* bias,
                         const float* clamp);

// The most columns that ConvRows's narrow tail takes (a row panel's last 1-4 columns in lanes
// of (column, row), 2 FMAs a step; on 32-register levels).
inline constexpr int kTailColumns = 4;

// The fp32 GEMM tiles of one ISA level (backends/cpu/isa/sgemm_micro.cpp).
struct MicroKernels {
  Isa isa;
  int mr;  // rows per tile (6)
  int nr;  // columns per tile: 2 vectors (16 or 32)
  // A last block of at most this many columns (kTailColumns, or 0: none) runs as a narrow
  // tail, best with its panel of W still in L1 from the tiles before it (ConvGemm::run_rows).
  int tail_columns;
  ConvRows conv_rows;
  int rhs_rows;  // the most rows of an RhsTile: 8 on 32-register levels, else 6
  RhsTile rhs_tile;
  RhsTall rhs_tall;  // null on 16-register levels (AVX2)
};

// Successive output rows of a strided conv (backends/cpu/conv_strided.h) for a block of
// `cols` <= nr output channels, the channels in the lanes: for j < cols and q < positions
// (output position q = (r, u): row r = q / width, column u = q % width),
//   y[j * y_channel + q] = act(bias[j] + sum over (c, ky, kx) of b[(c * kh + ky) * kw + kx][j]
//                              * x[r * next_row + c * plane + ky * row + 2 * u + kx]
//                              + z[j * y_channel + q])
// where x is a zero-padded copy of the input (no bounds to check) and b holds nr floats per
// step, zeros past cols. act: the clamp {lo, hi} when `clamp` (a NaN stays NaN), else none.
// The output rows are contiguous: y and z hold the positions in order.
struct StridedRows {
  const float* x;                // the first row's first window corner in channel 0
  int64_t channels, plane, row;  // input channels; floats between their planes, and rows
  int kh, kw;
  int sw;  // the stride along the rows: 1 or 2
  // Groups side by side (1, 2 or 4): each input position holds that many groups' values in
  // turn, and lane l of the block is channel l / interleave of its group l % interleave.
  int interleave;
  // On the 512-bit levels, blocks of 2 interleaved groups or of 17-24 channels run on 256-bit
  // vectors (StridedConv::halves_pay); interleaved groups' weights are then packed group 0's 8
  // lanes, then group 1's.
  bool halves;
  const float* b;
  int64_t cols;          // output channels of the block (of each of its groups)
  int64_t groups;        // the block's groups (1 where interleave is 1)
  int64_t group_stride;  // output channels from one of the block's groups to the next
  const float* bias;     // from the block's first channel, or null
  const float* z;        // the residual, laid out as y, or null
  float* y;
  int64_t y_channel, positions;
  int64_t width, next_row;  // output positions per row; floats between the rows' corners
  bool clamp;
  float lo, hi;
  // Cache lines to ask into L2 as the tiles go, one per step (the next block's weights, coming
  // from memory): prefetch_lines lines from prefetch.
  const float* prefetch = nullptr;
  int64_t prefetch_lines = 0;
};
struct StridedConvKernels {
  Isa isa;
  int nr;  // output channels per block: 2 vectors
  // Output positions per tile, at most; where spans_rows, a tile may take the end of one output
  // row and the start of the next (where width >= max_tile), else rows are tiled alone.
  int max_tile;
  bool spans_rows;
  void (*rows)(const StridedRows&);
};

// The depthwise plane kernels of one ISA level (backends/cpu/isa/depthwise_plane.cpp), by
// [(K - 3) / 2][stride == 2]: K x K (3, 5 or 7), stride 1 or 2 (depthwise.h).
struct DepthwisePlanes {
  Isa isa;
  void (*plane[3][2])(const DepthwisePlane&);
};

// The depthwise channels-as-lanes kernels of one ISA level (backends/cpu/isa/
// depthwise_channels.cpp), `lanes` channels per vector, by [(K - 3) / 2][stride == 2] (K = 3, 5
// or 7), and the scratch their layout needs; nhwc: the channels-last kernels, by [K == 5][stride
// == 2] (K = 3 or 5).
struct DepthwiseChannelKernels {
  Isa isa;
  int lanes;
  void (*kernel[3][2])(const DepthwiseChannels&);
  size_t (*scratch_floats)(int64_t h, int64_t w, int64_t oh, int64_t ow, int64_t k, int64_t s);
  void (*nhwc[2][2])(const DepthwiseNhwc&);
};

// Winograd F(4x4, 3x3)'s transforms (backends/cpu/winograd.h) for a run of `parts` x n <=
// lanes tiles, n side by side in each of `parts` consecutive tile rows, over `channels`
// channels (backends/cpu/isa/winograd_rows.cpp). The 36 values of point p = 6 * row + column
// of the run's tile l (part l / n) lie at p * point_stride + l.
struct WinogradInputRun {
  const float* x;     // the first channel's input plane [h, w]
  int64_t x_channel;  // floats from one channel's plane to the next
  int64_t h, w;
  int64_t ih0, iw0;  // the first tile's 6x6 window corner (may lie in the padding)
  int n, parts;
  int64_t channels;
  float* v;  // the first channel's transformed tiles
  int64_t v_channel, point_stride;
  // Whether whole vectors may be stored at v (the lanes past the run's are another run's,
  // written later, or unused), else only the run's lanes.
  bool whole_vectors;
};
struct WinogradOutputRun {
  const float* m;  // the first channel's products
  int64_t m_channel, point_stride;
  int n, parts;
  int64_t channels;
  const float* bias;  // per channel, or null
  float* y;           // the first tile's first output of the first channel
  const float* z;     // the residual, laid out as y, or null
  int64_t y_channel, ld;
  int rows, cols;  // of the run's 4 * parts x 4n outputs, those inside the plane
  bool clamp;
  float lo, hi;
};
struct WinogradKernels {
  Isa isa;
  int lanes;
  void (*input)(const WinogradInputRun&);
  void (*output)(const WinogradOutputRun&);
};

// The epilogue's smooth activations at one ISA level's width (backends/cpu/isa/activation.cpp).
struct SmoothActivation {
  Isa isa;
  void (*apply)(const Activation& act, float* p, int64_t n);
  // y = softmax(x) over one contiguous row of n (y may be x); exp(x - max) below -87.33654
  // gives exactly 0 (a masked -inf score stays out of the sum), a NaN gives NaN.
  void (*softmax_row)(const float* x, float* y, int64_t n);
};

// dst [cols, rows] = src [rows, cols]^T, plus add (laid out as dst) where not null, read just
// before dst is written there (add may be dst) (backends/cpu/isa/transpose.cpp).
using Transpose = void (*)(const float* src, int64_t rows, int64_t cols, int64_t ld_src, float* dst,
                           int64_t ld_dst, const float* add);
struct TransposeKernels {
  Isa isa;
  Transpose transpose;
};

// Rows iy0 .. iy0 + rows - 1 of `interleave` (1, 2 or 4) input planes [h, w] (src[i], or null
// for a plane of zeros) with their zero padding: each output row `width` positions of
// `interleave` floats (plane i's value i floats into the position), position u holding input
// column u - pad_l; rows and columns outside the input are zeros (backends/cpu/isa/
// padded_planes.cpp).
struct PaddedPlanes {
  const float* src[4];
  int interleave;
  int64_t h, w, iy0, rows, pad_l, width;
  float* dst;
};
struct PaddedPlaneKernels {
  Isa isa;
  void (*copy)(const PaddedPlanes&);
};

// The pools' flat path (backends/cpu/pool.cpp; backends/cpu/isa/pool_flat.cpp): y[f] for the
// count positions f of a block of [h, w] planes (each of block positions), the max (from -inf,
// as std::max(acc, x): a NaN is passed over) or the sum of its window's kh x kw taps x[f + (i -
// pad_t) * w + j - pad_l] where row_inside[i * block + f] & col_inside[j * block + f] (-1 or 0)
// say the tap lies inside the plane; bit for bit the scalar loop's results.
struct PoolFlat {
  const float* x;
  float* y;
  int64_t count, block;
  const int32_t* row_inside;
  const int32_t* col_inside;
  int kh, kw;
  int64_t w, pad_t, pad_l;
  bool max;
};
struct PoolKernels {
  Isa isa;
  void (*flat)(const PoolFlat&);
};

}  // namespace minfer::cpu::f32

namespace minfer::cpu {

// All the kernel tables of one ISA level (backends/cpu/isa/level_kernels.cpp), so that a
// caller picks the level once.
struct LevelKernels {
  Isa isa;
  const q8::MicroKernels* int8;
  const q8::RequantKernels* int8_requant;
  const q8::DepthwiseKernels* int8_depthwise;
  const q8::DepthwiseGroupKernels* int8_depthwise_groups;
  const q8::QuantizeKernels* int8_quantize;
  const f32::MicroKernels* fp32;
  const f32::DepthwisePlanes* depthwise_planes;
  const f32::DepthwiseChannelKernels* depthwise_channels;
  const f32::SmoothActivation* smooth_activation;
  const f32::WinogradKernels* winograd;
  const f32::TransposeKernels* transpose;
  const f32::StridedConvKernels* strided_conv;
  const f32::PaddedPlaneKernels* padded_planes;
  const f32::PoolKernels* pool;
};

// The tables of the highest compiled level <= `isa` that this CPU runs, or null when there is
// none (backends/cpu/isa.cpp).
const LevelKernels* level_kernels(Isa isa);

}  // namespace minfer::cpu

// One per compiled level (defined only where the compiler can target it).
namespace minfer::cpu::isa_avx2 {
extern const LevelKernels kLevelKernels;
}
namespace minfer::cpu::isa_avxvnni {
extern const LevelKernels kLevelKernels;
}
namespace minfer::cpu::isa_avx512 {
extern const LevelKernels kLevelKernels;
}
namespace minfer::cpu::isa_avx512vnni {
extern const LevelKernels kLevelKernels;
}
namespace minfer::cpu::isa_amx {
extern const LevelKernels kLevelKernels;
}
