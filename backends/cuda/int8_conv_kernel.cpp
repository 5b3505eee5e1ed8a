// com.minfer:QConv (NHWC, 2-D) and com.minfer:QGemm on CUDA, bit-exact with the reference:
//
//   acc[p, m] = init[m] + sum over k of A[p, k] * W[m, k]     (int32, wrapping)
//   init[m]   = B[m] - x_zero_point * sum over k of W[m, k]
//
// which is B[m] + sum (A - x_zero_point) * W, the reference's accumulator (padding reads the
// zero point, as in the reference). Three paths, all exact int32 arithmetic:
//
// * "cuda-int8-igemm" (one group, the fast path): one implicit-GEMM kernel on the tensor cores
//   reads A straight from the NHWC input and applies the output stage in registers
//   (int8_igemm.cu); no workspace, any batch.
// * "cuda-int8-cublaslt" (one group) and "cuda-int8-dp4a" (any group count): A is the im2col
//   matrix of the NHWC input (k = (ky * kw + kx) * C/group + c, rows padded to a multiple of
//   16 bytes) or, for a 1x1 stride-1 conv and QGemm, the input rows themselves; cuBLASLt's
//   int8 GEMM or a dp4a kernel writes int32 accumulators, then an epilogue kernel applies the
//   reference's output stage (requantize, clamp, fused residual QAdd, or float output). They
//   are what grouped convs run on, and the oracles the tests hold igemm to.
#include <algorithm>
#include <cstring>
#include <optional>

#include "backends/cuda/igemm_tune.h"
#include "backends/cuda/kernels.h"
#include "backends/cuda/lt_int8_gemm.h"
#include "ops/conv_geometry.h"
#include "ops/int8/int8_ops.h"
#include "ops/op_util.h"
#include "runtime/memory_planner.h"

namespace minfer::cuda {

namespace {

constexpr int64_t kChunkBytes = int64_t{64} << 20;  // im2col rows / accumulators per chunk
constexpr size_t kLtWorkspace = size_t{4} << 20;
constexpr size_t kAlign = 256;

size_t aligned(size_t bytes) { return (bytes + kAlign - 1) / kAlign * kAlign; }

// rank 0: any rank of at least 2 (QGemm's A: rows of K).
bool static_i8(const PrepareContext& ctx, size_t i, size_t rank) {
  const size_t r = ctx.inputs[i].shape.rank();
  return is_static(ctx, i, DType::i8) && (rank ? r == rank : r >= 2);
}

enum class GemmPath { Dp4a, CublasLt, Igemm };

class QConvCuda final : public Kernel {
 public:
  explicit QConvCuda(GemmPath path) : path_(path), try_lt_(path == GemmPath::CublasLt) {}

  // QConv in NHWC with 2 spatial dims, or QGemm; constant int8 weights and int32 bias.
  static bool supports(const PrepareContext& ctx) {
    const bool gemm = ctx.node.op_type == "QGemm";
    const size_t rank = gemm ? 2 : 4;
    if (ctx.inputs.size() < 2 || !static_i8(ctx, 0, gemm ? 0 : 4) || !static_i8(ctx, 1, rank) ||
        !ctx.inputs[1].constant || !outputs_fit(ctx))
      return false;
    if (!gemm && ctx.node.attrs.get_string("layout", "NCHW") != "NHWC") return false;
    if (ctx.inputs.size() > 2 && ctx.inputs[2].present &&
        (ctx.inputs[2].dtype != DType::i32 || !ctx.inputs[2].constant))
      return false;
    if (ctx.inputs.size() > 3 && ctx.inputs[3].present &&
        (!static_i8(ctx, 3, rank) || ctx.inputs[3].shape != ctx.outputs[0].shape))
      return false;
    return true;
  }
  // cuBLASLt's GEMM takes the whole product at once (one group, one chunk), where cuBLASLt
  // has an algorithm for its sizes.
  static bool supports_lt(const PrepareContext& ctx) {
    if (!supports(ctx) || ctx.node.attrs.get_int("group", 1) != 1 || !ctx.device_context)
      return false;
    QConvCuda probe(GemmPath::CublasLt);
    probe.plan_gemm(ctx);
    return probe.use_lt_;
  }
  static bool supports_igemm(const PrepareContext& ctx) {
    if (!supports(ctx) || ctx.node.attrs.get_int("group", 1) != 1 || !ctx.device_context)
      return false;
    QConvCuda probe(GemmPath::Igemm);
    probe.read_dims(ctx);
    const Window2d win = igemm_window(probe.conv_.win, probe.conv_.c);
    return igemm_accepts(probe.conv_.c, win.kh * win.kw * probe.conv_.cg);
  }

  void prepare(PrepareContext& ctx) override;
  void run(RunContext& ctx) const override;
  // The implicit GEMM's tile and K split, e.g. "128x64" or "32x64/4".
  std::string variant() const override {
    return path_ == GemmPath::Igemm ? igemm_plan_name(igemm_plan_) : std::string();
  }

 private:
  void read_dims(const PrepareContext& ctx);
  // Sizes of the GEMM, chunks and workspace; plans cuBLASLt's GEMM when try_lt_.
  void plan_gemm(const PrepareContext& ctx);
  void upload_weights(PrepareContext& ctx, const int8::OutputStage& st);
  void tune_igemm(const PrepareContext& ctx);

  GemmPath path_;
  bool try_lt_;
  bool use_lt_ = false;
  cuda::IgemmConv igemm_;
  cuda::IgemmPlan igemm_plan_;
  ConvNhwc conv_;
  int m_ = 0, mg_ = 0, group_ = 1, k_ = 0, ld_ = 0, ldc_ = 0, rows_ = 0, chunk_ = 0;
  bool direct_ = false, residual_ = false;
  int8_t x_zero_point_ = 0;
  size_t col_bytes_ = 0, acc_bytes_ = 0;
  QStage stage_;
  struct Uploaded {
    DeviceBuffer weights;  // [ldc or M][ld]: W reordered to the im2col's k order, zero padded
    DeviceBuffer params;   // int32 [4][M]: init, mult, shift, pre; then float [M]: scale
  };
  std::shared_ptr<const Uploaded> uploaded_;  // shared by the session's plans of every shape
  LtInt8Gemm lt_;
};

void QConvCuda::read_dims(const PrepareContext& ctx) {
  const Shape& xs = ctx.inputs[0].shape;
  const Shape& ws = ctx.inputs[1].shape;
  Window2d& w = conv_.win;
  if (ctx.node.op_type == "QGemm") {
    // Rows of A (all dims but the last) are "pixels" of a 1x1 conv over K channels.
    const int64_t k = xs.dims().back();
    if (ws[1] != k)
      ctx.fail("weight has " + std::to_string(ws[1]) + " columns, A has " + std::to_string(k));
    conv_.n = int(dims_product(xs, 0, xs.rank() - 1));
    conv_.c = conv_.cg = int(k);
    m_ = mg_ = int(ws[0]);
    return;
  }
  ConvGeometry g = conv_geometry(ctx.node, int8::nhwc_to_nchw_shape(xs), ws);
  if (g.rank() != 2) ctx.fail("the CUDA QConv kernel supports 2-D convolutions");
  conv_.n = int(xs[0]);
  conv_.c = int(xs[3]);
  w = window_2d(g);  // g is of the NCHW view: the same H and W as NHWC xs
  group_ = int(g.group);
  conv_.cg = int(g.in_channels_per_group());
  m_ = int(g.out_channels);
  mg_ = int(g.out_channels_per_group());
}

// Weights as [rows][ld] with k in the im2col's order, the per-channel init and the output
// stage's parameters, to the device.
void QConvCuda::upload_weights(PrepareContext& ctx, const int8::OutputStage& st) {
  DeviceContext& dc = device_context(ctx);
  const Tensor& w = *ctx.inputs[1].constant;
  const Tensor* bias =
      ctx.inputs.size() > 2 && ctx.inputs[2].present ? ctx.inputs[2].constant : nullptr;
  // The implicit GEMM may read a wider window (igemm_window): its extra taps stay zero.
  const int kh = conv_.win.kh, kw = conv_.win.kw, cg = conv_.cg;
  const int kw_read = path_ == GemmPath::Igemm ? igemm_.win.kw : kw;
  const int rows = std::max(ldc_, m_);
  std::vector<int8_t> packed(size_t(rows) * ld_, 0);
  std::vector<int32_t> params(size_t(4) * m_);
  std::vector<float> scale(size_t(m_), 0.f);
  const int8_t* wp = w.data<int8_t>();
  for (int m = 0; m < m_; ++m) {
    int64_t sum = 0;
    for (int c = 0; c < cg; ++c)
      for (int ky = 0; ky < kh; ++ky)
        for (int kx = 0; kx < kw; ++kx) {
          const int8_t v = wp[((int64_t(m) * cg + c) * kh + ky) * kw + kx];
          packed[size_t(m) * ld_ + (ky * kw_read + kx) * cg + c] = v;
          sum += v;
        }
    const int64_t b = bias ? bias->data<int32_t>()[m] : 0;
    params[m] = int8::wrap_int32(b - int64_t{x_zero_point_} * sum);
    if (st.int8_out) {
      params[m_ + m] = st.mult[m].m;
      params[2 * m_ + m] = st.mult[m].n;
      params[3 * m_ + m] = st.mult[m].l;
    } else {
      scale[m] = st.out_scale[m];
    }
  }
  std::vector<char> bytes(params.size() * 4 + scale.size() * 4);
  std::memcpy(bytes.data(), params.data(), params.size() * 4);
  std::memcpy(bytes.data() + params.size() * 4, scale.data(), scale.size() * 4);
  // The layout depends on the GEMM path and its leading dimensions, not on the batch.
  uploaded_ = ctx.share<Uploaded>(
      "cuda.qconv.path" + std::to_string(int(path_)) + ".ld" + std::to_string(ld_) + ".rows" +
          std::to_string(rows),
      packed.size() + bytes.size(), [&] {
        auto u = std::make_shared<Uploaded>();
        u->weights = upload(dc, packed);
        u->params = upload(dc, bytes);
        return u;
      });
  const int32_t* p = uploaded_->params.as<int32_t>();
  stage_.init = p;
  stage_.mult = p + m_;
  stage_.shift = p + 2 * m_;
  stage_.pre = p + 3 * m_;
  stage_.scale = reinterpret_cast<const float*>(p + 4 * m_);
}

void QConvCuda::plan_gemm(const PrepareContext& ctx) {
  read_dims(ctx);
  const Window2d& w = conv_.win;
  k_ = w.kh * w.kw * conv_.cg;
  if (path_ == GemmPath::Igemm) {
    const Window2d read = igemm_window(w, conv_.c);
    const int k_read = read.kh * read.kw * conv_.cg;
    ld_ = int(round_up(k_read, 64));  // whole 64-byte k tiles
    ldc_ = m_;
    rows_ = conv_.n * w.oh * w.ow;
    igemm_ = {conv_.c, m_, k_read, ld_, rows_, 0, read};
    igemm_plan_ = igemm_plan(igemm_, ctx.device_context->sm_count);
    return;
  }
  ld_ = int(round_up(k_, 16));
  const bool one_by_one = ctx.node.op_type == "QGemm" ||
                          (w.kh == 1 && w.kw == 1 && w.sh == 1 && w.sw == 1 && w.pad_t == 0 &&
                           w.pad_l == 0 && w.h == w.oh && w.w == w.ow && group_ == 1);
  direct_ = one_by_one && conv_.c == ld_;  // the input rows are already GEMM rows
  ldc_ = group_ == 1 ? int(round_up(m_, 4)) : m_;
  rows_ = conv_.n * w.oh * w.ow;
  // Rows per chunk: the im2col rows and the int32 accumulators each within kChunkBytes.
  const int64_t per_row = std::max<int64_t>({1, direct_ ? 0 : ld_, int64_t(ldc_) * 4});
  chunk_ = int(std::clamp<int64_t>(kChunkBytes / per_row, 1, std::max(rows_, 1)));
  col_bytes_ = direct_ ? 0 : aligned(size_t(chunk_) * ld_);
  acc_bytes_ = aligned(size_t(chunk_) * ldc_ * 4);
  // B is the input itself (an arena tensor: kArenaAlignment) or the im2col buffer.
  const uint32_t b_alignment = uint32_t(direct_ ? kArenaAlignment : kAlign);
  use_lt_ = try_lt_ && group_ == 1 && chunk_ >= rows_ && rows_ > 0 && m_ > 0 &&
            lt_.plan(*ctx.device_context, ldc_, rows_, ld_, ld_, direct_ ? conv_.c : ld_, ldc_,
                     b_alignment, kLtWorkspace);
}

// The implicit GEMM's plan: forced by MINFER_IGEMM_PLAN, else the fastest candidate timed on
// this conv's sizes (igemm_tune.h), the heuristic's first. Needs the uploaded weights and the
// output stage: the timed launches run the whole kernel.
void QConvCuda::tune_igemm(const PrepareContext& ctx) {
  if (const std::optional<IgemmPlan> forced = forced_igemm_plan()) {
    igemm_plan_ = *forced;
    return;
  }
  DeviceContext& dc = *ctx.device_context;
  std::vector<IgemmPlan> candidates = {igemm_plan_};
  for (const IgemmPlan& p : igemm_candidates(igemm_, dc.sm_count, 0))
    if (!(p == igemm_plan_)) candidates.push_back(p);
  IgemmScratchSizes sizes;
  sizes.x = size_t(ctx.inputs[0].shape.numel());
  sizes.y = size_t(ctx.outputs[0].shape.numel()) * (stage_.int8_out ? 1 : 4);
  sizes.z = residual_ ? size_t(ctx.outputs[0].shape.numel()) : 0;
  for (const IgemmPlan& p : candidates)
    sizes.workspace = std::max(sizes.workspace, igemm_workspace_bytes(igemm_, p));
  const std::string key = std::string("int8/") + (stage_.int8_out ? "i8" : "f32") +
                          (residual_ ? "+z/" : "/") + igemm_key(igemm_);
  const int8_t* w = uploaded_->weights.as<int8_t>();
  igemm_plan_ = tuned_igemm_plan(
      dc, key, candidates, sizes, [](const IgemmPlan& p) { igemm_prepare(p.tile); },
      [&](const IgemmPlan& p, const IgemmScratch& b, cudaStream_t stream) {
        qconv_igemm(static_cast<const int8_t*>(b.x), w, igemm_, stage_,
                    static_cast<const int8_t*>(b.z), b.y, p, b.workspace, stream);
      });
}

void QConvCuda::prepare(PrepareContext& ctx) {
  device_context(ctx);
  plan_gemm(ctx);
  if (try_lt_ && !use_lt_) ctx.fail("cuBLASLt has no int8 GEMM for this node");
  residual_ = ctx.node.op_type == "QConv" && ctx.inputs.size() > 3 && ctx.inputs[3].present;
  const int8::OutputStage st = int8::parse_output_stage(ctx.node, m_, residual_);
  if (st.smooth)
    ctx.fail("the CUDA int8 kernels fuse only Relu into a float output, not activation '" +
             ctx.node.attrs.get_string("activation", "") + "'");
  x_zero_point_ = int8_t(int8::x_zero_point(ctx.node));
  igemm_.x_zero_point = x_zero_point_;
  stage_.int8_out = st.int8_out;
  stage_.relu = st.relu;
  stage_.residual = st.residual;
  stage_.zero_point = st.zero_point;
  stage_.qmin = st.qmin;
  stage_.qmax = st.qmax;
  stage_.ma = st.add.ma;
  stage_.mb = st.add.mb;
  stage_.k = st.add.k;
  stage_.z_zero_point = st.z_zero_point;
  stage_.y_zero_point = st.y_zero_point;
  stage_.y_min = st.y_min;
  stage_.y_max = st.y_max;
  upload_weights(ctx, st);
  ctx.packed_inputs = {1, 2};  // weights and bias live in uploaded_
  if (path_ == GemmPath::Igemm) {
    tune_igemm(ctx);
    DeviceGuard guard(ctx.device_context->device);
    igemm_prepare(igemm_plan_.tile);
  }
  // kAlign of slack: run() aligns the workspace's start.
  if (path_ == GemmPath::Igemm) {
    const size_t bytes = igemm_workspace_bytes(igemm_, igemm_plan_);
    ctx.workspace_bytes = bytes ? kAlign + bytes : 0;
  } else {
    ctx.workspace_bytes = kAlign + col_bytes_ + acc_bytes_ + (use_lt_ ? lt_.workspace_bytes() : 0);
  }
}

void QConvCuda::run(RunContext& ctx) const {
  DeviceContext& dc = *ctx.device_context;
  DeviceGuard guard(dc.device);
  const int8_t* x = static_cast<const int8_t*>(ctx.inputs[0]->raw());
  const int8_t* z = residual_ ? static_cast<const int8_t*>(ctx.inputs[3]->raw()) : nullptr;
  char* y = static_cast<char*>(ctx.outputs[0]->raw());
  const size_t y_size = stage_.int8_out ? 1 : 4;
  // The im2col rows, the accumulators and cuBLASLt's workspace, each kAlign-aligned.
  char* ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(ctx.workspace) + kAlign - 1) /
                                     kAlign * kAlign);
  int8_t* col = reinterpret_cast<int8_t*>(ws);
  int32_t* acc = reinterpret_cast<int32_t*>(ws + col_bytes_);
  const int8_t* w = uploaded_->weights.as<int8_t>();
  if (path_ == GemmPath::Igemm) {
    qconv_igemm(x, w, igemm_, stage_, z, y, igemm_plan_, ws, dc.stream);
    return;
  }
  for (int p0 = 0; p0 < rows_; p0 += chunk_) {
    const int rows = std::min(chunk_, rows_ - p0);
    for (int g = 0; g < group_; ++g) {
      const int8_t* a = x + int64_t(p0) * conv_.c;
      if (!direct_) {
        im2col_i8_nhwc(x, conv_, g, p0, rows, ld_, x_zero_point_, col, dc.stream);
        a = col;
      }
      if (use_lt_)
        lt_.run(dc, w, a, acc, ws + col_bytes_ + acc_bytes_);
      else
        gemm_i8_dp4a(a, ld_, w + int64_t(g) * mg_ * ld_, ld_, acc + g * mg_, ldc_, rows, mg_, ld_,
                     dc.stream);
    }
    qconv_epilogue(acc, ldc_, rows, m_, stage_, z ? z + int64_t(p0) * m_ : nullptr,
                   y + int64_t(p0) * m_ * y_size, dc.stream);
  }
}

}  // namespace

void register_int8_conv_kernels(OpRegistry& registry) {
  // Later registrations are tried first: the implicit GEMM where it applies (one group),
  // else cuBLASLt, else dp4a.
  for (const char* op : {"QConv", "QGemm"}) {
    registry.register_kernel(kernel_def(kMinferDomain, op, {DType::i8}, "cuda-int8-dp4a",
                                        QConvCuda::supports,
                                        [] { return std::make_unique<QConvCuda>(GemmPath::Dp4a); }));
    registry.register_kernel(
        kernel_def(kMinferDomain, op, {DType::i8}, "cuda-int8-cublaslt", QConvCuda::supports_lt,
                   [] { return std::make_unique<QConvCuda>(GemmPath::CublasLt); }));
    registry.register_kernel(
        kernel_def(kMinferDomain, op, {DType::i8}, "cuda-int8-igemm", QConvCuda::supports_igemm,
                   [] { return std::make_unique<QConvCuda>(GemmPath::Igemm); }));
  }
}

}  // namespace minfer::cuda
