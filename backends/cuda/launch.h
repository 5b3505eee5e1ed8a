// The device code of the CUDA kernels, seen from the host: plain launch functions (one group
// per .cu file) that enqueue work on a stream and check the launch. Indices are 32-bit: the
// kernels' `supports` predicates decline tensors of 2^31 or more elements.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace minfer::cuda {

// A 2-D convolution or pooling window: input [.., H, W], output [.., OH, OW] (1-D = H 1).
struct Window2d {
  int h = 1, w = 1, oh = 1, ow = 1;
  int kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, pad_t = 0, pad_l = 0;
};

// A fused activation as a clamp (Relu = [0, inf)); `enabled` false = identity.
struct Clamp {
  bool enabled = false;
  float lo = 0.f, hi = 0.f;
};

// ---- conv.cu: fp32 convolution helpers (NCHW) -------------------------------------------

// col[i][k][p] for `images` images of `channels` channels: k = (c * kh + ky) * kw + kx, p the
// output position; padding reads 0.
void im2col_f32(const float* x, int images, int channels, const Window2d& win, float* col,
                cudaStream_t stream);
// y[n][m][p] = act(y + bias[m] + z[n][m][p]) over `planes` = images * channels planes of
// `plane` elements (bias, z may be null).
void conv_epilogue_f32(float* y, int planes, int channels, int plane, const float* bias,
                       const float* z, Clamp act, cudaStream_t stream);
// y[i][j] = act(y + beta * c[i * c_row + j * c_col]) for an [m, n] output (c may be null).
void gemm_epilogue_f32(float* y, int m, int n, const float* c, int c_row, int c_col, float beta,
                       Clamp act, cudaStream_t stream);

// ---- pool.cu / elementwise.cu: fp32 ----------------------------------------------------

// MaxPool over `planes` NCHW planes; windows that see no input give -inf (as the CPU).
void max_pool_f32(const float* x, float* y, int planes, const Window2d& win, cudaStream_t stream);
// y[p] = mean of plane p (`size` elements).
void global_avg_pool_f32(const float* x, float* y, int planes, int size, cudaStream_t stream);
// y = min(max(x, lo), hi), the CPU's Clip (NaN stays NaN).
void clamp_f32(const float* x, float* y, int n, float lo, float hi, cudaStream_t stream);
void add_f32(const float* a, const float* b, float* y, int n, cudaStream_t stream);

// ---- layout.cu: data movement for any element type -------------------------------------

// y[i] = map[i] >= 0 ? x[map[i]] : pad, elements of `elem_size` bytes (1, 2, 4 or 8; `pad`
// holds the pad value's bytes).
void gather(const void* x, const int32_t* map, void* y, int n, int elem_size, uint64_t pad,
            cudaStream_t stream);

// ---- int8_conv.cu: QConv / QGemm -------------------------------------------------------

// An NHWC convolution: input [N, H, W, C], `group` groups of `cg` input channels.
struct ConvNhwc {
  int n = 1, c = 1, cg = 1;
  Window2d win;
};
// Rows [p0, p0 + rows) of group g's im2col matrix, each `ld` bytes: k = (ky * kw + kx) * cg
// + c for k < K = kh * kw * cg (padding reads `pad`, the input zero point), then 0 up to ld.
void im2col_i8_nhwc(const int8_t* x, const ConvNhwc& s, int g, int p0, int rows, int ld, int8_t pad,
                    int8_t* col, cudaStream_t stream);
// acc[p * ldc + m] = sum over k < K of a[p * lda + k] * w[m * ldw + k], p < rows, m < cols;
// K, lda, ldw multiples of 4 and a, w 4-byte aligned (dp4a on 4 bytes at a time).
void gemm_i8_dp4a(const int8_t* a, int lda, const int8_t* w, int ldw, int32_t* acc, int ldc,
                  int rows, int cols, int k, cudaStream_t stream);

// The output stage of docs/int8.md with per-channel parameters in device memory, laid out
// as int8::OutputStage (ops/int8/int8_ops.h) holds them.
struct QStage {
  const int32_t* init = nullptr;   // added to the accumulator (wrapping): bias - zx * sum(w)
  const int32_t* mult = nullptr;   // Multiplier::m
  const int32_t* shift = nullptr;  // Multiplier::n
  const int32_t* pre = nullptr;    // Multiplier::l
  const float* scale = nullptr;    // float output: s_x * s_w[c]
  bool int8_out = true, relu = false, residual = false;
  int32_t zero_point = 0, qmin = -128, qmax = 127;
  int32_t ma = 0, mb = 0, k = 1, z_zero_point = 0, y_zero_point = 0, y_min = -128, y_max = 127;
};
// For rows p < rows and channels m < channels: y[p * channels + m] = stage(acc[p * ldc + m]);
// z (the residual) is laid out as y. y is int8 or float (st.int8_out).
void qconv_epilogue(const int32_t* acc, int ldc, int rows, int channels, const QStage& st,
                    const int8_t* z, void* y, cudaStream_t stream);

// ---- int8_igemm.cu: QConv / QGemm as one implicit GEMM on the tensor cores ----------------

// One group of an NHWC convolution (QGemm: a 1x1 conv of [N, K] "pixels") as the implicit
// GEMM takes it: rows = N * OH * OW output pixels, m output channels, k = kh * kw * c, the
// packed weight [m][ld] (ld a multiple of 64, zero beyond k).
struct IgemmConv {
  int c = 1, m = 1, k = 1, ld = 64, rows = 0;
  int8_t x_zero_point = 0;
  Window2d win;
};
// Whether the implicit GEMM takes a conv of c input bytes per pixel and k = kh * kw * c (kw
// from igemm_window): any k when c is a multiple of 16 (16-byte copies) or 4 or 8 (whole
// pixels), else k up to kMaxGatherK (the byte gather's table).
inline constexpr int kMaxGatherK = 4096;
bool igemm_accepts(int c, int k);
// The window as the implicit GEMM reads it: for pixels of 4 or 8 bytes, kw padded so that a
// window row fills whole 16-byte chunks (whole-pixel copies); the added taps get zero weights.
Window2d igemm_window(const Window2d& win, int c_bytes);
// The output tile of one thread block (rows x channels), and how many blocks split K.
enum class IgemmTile { L256x64, L128x128, L128x64, S64x64, XS32x64 };
inline constexpr IgemmTile kIgemmTiles[] = {IgemmTile::L256x64, IgemmTile::L128x128,
                                            IgemmTile::L128x64, IgemmTile::S64x64,
                                            IgemmTile::XS32x64};
struct IgemmPlan {
  IgemmTile tile = IgemmTile::L128x128;
  int splits = 1;
  bool operator==(const IgemmPlan&) const = default;
};
// The heuristic plan: the largest tile that gives every multiprocessor a block, else the
// smallest with K split (igemm_tune.h times the candidates instead).
IgemmPlan igemm_plan(const IgemmConv& cv, int sm_count);
// Every tile once; with splits 0, each tile unsplit and, where it gives the chip too few
// blocks, with K split too; with splits > 0, each tile with exactly that many splits (for
// fp16, whose rounding depends on the splits but not on the tile).
std::vector<IgemmPlan> igemm_candidates(const IgemmConv& cv, int sm_count, int splits);
const char* igemm_tile_name(IgemmTile tile);
// Device memory a run needs (split K: the int32 partial sums).
size_t igemm_workspace_bytes(const IgemmConv& cv, const IgemmPlan& plan);
// Lets the tile's kernels use their shared memory on the current device (once, before
// launches and graph captures).
void igemm_prepare(IgemmTile tile);
// y[p * m + c] = stage(init[c] + sum over k of A[p, k] * w[c * ld + k]), z laid out as y.
// x, w, z 16-byte aligned; `workspace` igemm_workspace_bytes(), 256-byte aligned.
void qconv_igemm(const int8_t* x, const int8_t* w, const IgemmConv& cv, const QStage& st,
                 const int8_t* z, void* y, const IgemmPlan& plan, void* workspace,
                 cudaStream_t stream);

// ---- half_igemm.cu: fp16 HConv as one implicit GEMM (fp32 accumulate) -------------------

// The fp16 output stage: y = act(acc + bias[m] + z), rounded to fp16 once.
struct HStage {
  const float* bias = nullptr;  // [m], or null
  Clamp act;
  bool residual = false;
};
// The conv as igemm takes it, in bytes: c = 2 * C, k = 2 * kh * kw * C, ld a multiple of 64
// bytes; x_zero_point 0 (padding reads +0.0).
// (win as igemm_window gives it for 2 * c bytes.)
IgemmConv half_igemm_conv(int c, int m, int rows, const Window2d& win);
// Split K: the fp32 partial sums of each split, summed in split order (deterministic).
size_t hconv_workspace_bytes(const IgemmConv& cv, const IgemmPlan& plan);
void hconv_prepare(IgemmTile tile);
// y[p * m + c] = stage(sum over k of A[p, k] * w[c][k]) over fp16 NHWC x, z, y and fp16
// weights [m][ld / 2]; x, w, z 16-byte aligned; `workspace` 256-byte aligned.
void hconv_igemm(const void* x, const void* w, const IgemmConv& cv, const HStage& st,
                 const void* z, void* y, const IgemmPlan& plan, void* workspace,
                 cudaStream_t stream);

// ---- half_ops.cu: fp16 layout changes and pools -------------------------------------------

// x float [n][c][hw] -> y fp16 [n][hw][c], rounded to nearest even; and back.
void to_half_nhwc(const float* x, void* y, int n, int c, int hw, cudaStream_t stream);
void from_half_nhwc(const void* x, float* y, int n, int c, int hw, cudaStream_t stream);
// MaxPool over fp16 NHWC [n, h, w, c]; a window that sees no input gives -inf.
void hmax_pool_nhwc(const void* x, void* y, int n, int c, const Window2d& win,
                    cudaStream_t stream);
// y[i][c] = mean over hw of fp16 x[i][hw][c], in float.
void hglobal_avg_pool(const void* x, float* y, int n, int hw, int c, cudaStream_t stream);

// ---- space_to_depth.cu: SpaceToDepthNhwc --------------------------------------------------

// x [n][c][h][w] -> y [n][h / block][w / block][channels] (ops/space_to_depth_nhwc.h);
// elements of elem_size bytes (1, 2 or 4), float to fp16 when `half`, float to int8 as
// QuantizeLinear when `quantize`. `pad` points to one output element on the host.
struct SpaceToDepth {
  int n = 1, c = 1, h = 1, w = 1, block = 2, channels = 4, elem_size = 1;
  bool half = false, quantize = false;
  float scale = 1.f;
  int32_t zero_point = 0;
};
void space_to_depth_nhwc(const void* x, void* y, const SpaceToDepth& s, const void* pad,
                         cudaStream_t stream);

// ---- int8_ops.cu: QuantizeLinear, DequantizeLinear, QAdd, pooling ------------------------

// Per-element parameters: index (i / inner) % count into scale/zero_point (count 1 = per
// tensor). Both arrays are in device memory.
struct AxisParams {
  const float* scale = nullptr;
  const int32_t* zero_point = nullptr;
  int inner = 1, count = 1;
};
// ONNX QuantizeLinear to int8 (qmin -128) or uint8 (qmin 0).
void quantize_f32(const float* x, void* y, int n, AxisParams p, bool to_u8, cudaStream_t stream);
// ONNX DequantizeLinear from int8, uint8 or int32 (`in_bytes` 1 or 4; `is_unsigned` for u8).
void dequantize_f32(const void* x, float* y, int n, AxisParams p, int in_bytes, bool is_unsigned,
                    cudaStream_t stream);

struct QAddParams {
  int32_t ma = 0, mb = 0, k = 1, a_zero_point = 0, b_zero_point = 0, y_zero_point = 0;
  int32_t y_min = -128, y_max = 127;
};
void qadd(const int8_t* a, const int8_t* b, int8_t* y, int n, QAddParams p, cudaStream_t stream);

// QMaxPool over an NHWC tensor [n, h, w, c]; a window that sees no input gives -128.
void qmax_pool_nhwc(const int8_t* x, int8_t* y, int n, int c, const Window2d& win,
                    cudaStream_t stream);
// QGlobalAveragePool of [n, hw, c]: y[i][c] = requant(sum of (x - zx)) with one multiplier.
struct QPoolParams {
  int32_t mult = 0, shift = 33, pre = 0, x_zero_point = 0, y_zero_point = 0;
};
void qglobal_avg_pool(const int8_t* x, int8_t* y, int n, int hw, int c, QPoolParams p,
                      cudaStream_t stream);

}  // namespace minfer::cuda
