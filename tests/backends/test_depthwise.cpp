// The depthwise K x K kernels of the CPU Conv (backends/cpu/depthwise.h, one plane at a time,
// depthwise_channels.h, 8 channels at a time, and its channels-last kernel) against a float64
// depthwise convolution: through cpu::ConvKernel (which picks one by plane size, splits the
// work over 1-3 threads), and each kernel called directly on every geometry, whichever
// ConvKernel would pick.
//
// Error measure: max |y - exact| / max |exact| (exact: float64, the same bias, residual and
// clamp), at most 1e-5; fp32 sums of 9 or 25 products of values in [-1, 1] stay near 1e-7.
// One wrong tap, lane, border pixel or unwritten output (outputs start as NaN, the scratch is
// poisoned with NaN) is off by about the output's scale.
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "backends/cpu/conv.h"
#include "backends/cpu/depthwise.h"
#include "backends/cpu/depthwise_channels.h"
#include "isa/for_each_isa.h"
#include "test_util.h"

namespace minfer {
namespace {

constexpr double kRelBound = 1e-5;

struct DwCase {
  int64_t n, c, h, w, k, s;
  int64_t pad_end;  // padding after (K / 2 before)
  bool bias, residual;
  int act;  // 0 none, 1 Relu, 2 Clip [-0.5, 0.75] * the output's scale, 3 Silu
  bool constant_weights;
  int64_t oh() const { return (h + k / 2 + pad_end - k) / s + 1; }
  int64_t ow() const { return (w + k / 2 + pad_end - k) / s + 1; }
  Shape y() const { return Shape{n, c, oh(), ow()}; }
};

std::string describe(const DwCase& c) {
  std::ostringstream s;
  s << "x [" << c.n << "," << c.c << "," << c.h << "," << c.w << "] K " << c.k << " stride " << c.s
    << " pad_end " << c.pad_end << (c.bias ? " bias" : "") << (c.residual ? " residual" : "")
    << (c.act == 1   ? " Relu"
        : c.act == 2 ? " Clip"
        : c.act == 3 ? " Silu"
                     : "")
    << (c.constant_weights ? "" : " run-time weights");
  return s.str();
}

struct Inputs {
  std::vector<Tensor> t;      // x, w, b (maybe undefined), z (maybe absent)
  std::vector<double> exact;  // pre-activation
  double scale = 0;
  float lo = -INFINITY, hi = INFINITY;
  bool silu = false;
};

Inputs make_inputs(const DwCase& c, std::mt19937& rng) {
  Inputs in;
  in.t.push_back(test::random_tensor(Shape{c.n, c.c, c.h, c.w}, rng));
  in.t.push_back(test::random_tensor(Shape{c.c, 1, c.k, c.k}, rng));
  in.t.push_back(c.bias ? test::random_tensor(Shape{c.c}, rng) : Tensor());
  if (c.residual) in.t.push_back(test::random_tensor(c.y(), rng));
  const int64_t oh = c.oh(), ow = c.ow(), p = c.k / 2;
  const float* x = in.t[0].data<float>();
  const float* w = in.t[1].data<float>();
  in.exact.resize(size_t(c.n * c.c * oh * ow));
  for (int64_t b = 0; b < c.n; ++b)
    for (int64_t m = 0; m < c.c; ++m)
      for (int64_t i = 0; i < oh; ++i)
        for (int64_t j = 0; j < ow; ++j) {
          double s = c.bias ? double(in.t[2].data<float>()[m]) : 0.0;
          for (int64_t di = 0; di < c.k; ++di)
            for (int64_t dj = 0; dj < c.k; ++dj) {
              const int64_t ih = i * c.s + di - p, iw = j * c.s + dj - p;
              if (ih < 0 || ih >= c.h || iw < 0 || iw >= c.w) continue;
              s += double(x[((b * c.c + m) * c.h + ih) * c.w + iw]) *
                   double(w[(m * c.k + di) * c.k + dj]);
            }
          const size_t at = size_t(((b * c.c + m) * oh + i) * ow + j);
          if (c.residual) s += double(in.t[3].data<float>()[at]);
          in.exact[at] = s;
          in.scale = std::max(in.scale, std::abs(s));
        }
  if (c.act == 1) in.lo = 0.f;
  if (c.act == 2) in.lo = float(-0.5 * in.scale), in.hi = float(0.75 * in.scale);
  in.silu = c.act == 3;
  return in;
}

double rel_error(const Inputs& in, const Tensor& y) {
  double err = 0;
  for (size_t i = 0; i < in.exact.size(); ++i) {
    const double x = in.exact[i];
    const double want =
        in.silu ? x / (1 + std::exp(-x)) : std::min(std::max(x, double(in.lo)), double(in.hi));
    const double e = std::abs(double(y.data<float>()[i]) - want);
    if (!(e <= err)) err = std::isnan(e) ? INFINITY : e;
  }
  return err / in.scale;
}

Node fused_node(const DwCase& c, const Inputs& in) {
  Node node;
  node.name = "dw";
  node.op_type = "FusedConv";
  node.domain = kMinferDomain;
  node.attrs.set("group", c.c);
  node.attrs.set("strides", std::vector<int64_t>{c.s, c.s});
  node.attrs.set("pads", std::vector<int64_t>{c.k / 2, c.k / 2, c.pad_end, c.pad_end});
  if (c.act == 1) node.attrs.set("activation", std::string("Relu"));
  if (c.act == 2) {
    node.attrs.set("activation", std::string("Clip"));
    node.attrs.set("activation_min", in.lo);
    node.attrs.set("activation_max", in.hi);
  }
  if (c.act == 3) node.attrs.set("activation", std::string("Silu"));
  return node;
}

Tensor nan_tensor(const Shape& s) {
  Tensor t(DType::f32, s);
  std::fill(t.data<float>(), t.data<float>() + t.numel(), std::numeric_limits<float>::quiet_NaN());
  return t;
}

// Scratch memory poisoned with NaN, as the runtime's workspace may hold anything.
struct Scratch {
  explicit Scratch(size_t floats) : n(std::max<size_t>(floats, 1)) {
    p = static_cast<float*>(::operator new(n * sizeof(float), std::align_val_t(64)));
    std::fill(p, p + n, std::numeric_limits<float>::quiet_NaN());
  }
  ~Scratch() { ::operator delete(p, std::align_val_t(64)); }
  size_t n;
  float* p;
};

Tensor run_conv_kernel(const DwCase& c, const Inputs& in, int threads) {
  const Node node = fused_node(c, in);
  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < in.t.size(); ++i) {
    const bool constant = c.constant_weights && (i == 1 || i == 2);
    infos.push_back(in.t[i].defined() ? TensorInfo{true, DType::f32, in.t[i].shape(),
                                                   constant ? &in.t[i] : nullptr}
                                      : TensorInfo{});
  }
  PrepareContext pctx{node, infos, {{true, DType::f32, c.y(), nullptr}}};
  pctx.threads = threads;
  cpu::ConvKernel kernel;
  kernel.prepare(pctx);
  Tensor y = nan_tensor(c.y());
  Scratch ws(pctx.workspace_bytes / sizeof(float));
  RunContext rc;
  for (const Tensor& t : in.t) rc.inputs.push_back(t.defined() ? &t : nullptr);
  rc.outputs.push_back(&y);
  rc.workspace = ws.p;
  rc.threads = threads;
  kernel.run(rc);
  return y;
}

cpu::Activation activation(const DwCase& c, const Inputs& in) {
  return cpu::parse_activation(fused_node(c, in));
}

// The plane kernel called directly, one plane after the other.
Tensor run_planes(const DwCase& c, const Inputs& in) {
  const int64_t oh = c.oh(), ow = c.ow();
  cpu::DepthwisePlaneFn fn =
      cpu::depthwise_plane_kernel(c.k, c.k, c.s, c.s, 1, 1, c.k / 2, c.k / 2, c.h, c.w, oh, ow);
  REQUIRE(fn != nullptr);
  const cpu::Activation act = activation(c, in);
  Scratch scratch(cpu::depthwise_scratch_floats(c.h, c.w, c.k));
  Tensor y = nan_tensor(c.y());
  for (int64_t plane = 0; plane < c.n * c.c; ++plane) {
    const int64_t m = plane % c.c;
    cpu::DepthwisePlane a;
    a.x = in.t[0].data<float>() + plane * c.h * c.w;
    a.h = c.h;
    a.w = c.w;
    a.weights = in.t[1].data<float>() + m * c.k * c.k;
    a.bias = c.bias ? in.t[2].data<float>()[m] : 0.f;
    a.residual = c.residual ? in.t[3].data<float>() + plane * oh * ow : nullptr;
    a.act = &act;
    a.y = y.data<float>() + plane * oh * ow;
    a.oh = oh;
    a.ow = ow;
    a.scratch = scratch.p;
    // In three ranges of rows (as threads split a plane), the first of an odd count.
    const int64_t splits[] = {0, std::min<int64_t>(oh, 3), std::min<int64_t>(oh, 3 + oh / 2), oh};
    for (int i = 0; i < 3; ++i) {
      a.r0 = splits[i];
      a.r1 = splits[i + 1];
      fn(a);
    }
  }
  return y;
}

// The channel-interleaved kernel called directly: one call per image, all channels.
Tensor run_channels(const DwCase& c, const Inputs& in) {
  const int64_t oh = c.oh(), ow = c.ow();
  const cpu::DepthwiseChannelsKernel kernel =
      cpu::depthwise_channels_kernel(c.k, c.s, c.h, c.w, oh, ow);
  const cpu::DepthwiseChannelsFn fn = kernel.fn;
  REQUIRE(fn != nullptr);
  const cpu::Activation act = activation(c, in);
  Scratch scratch(kernel.scratch_floats);
  Tensor y = nan_tensor(c.y());
  for (int64_t b = 0; b < c.n; ++b) {
    cpu::DepthwiseChannels a;
    a.x = in.t[0].data<float>() + b * c.c * c.h * c.w;
    a.weights = in.t[1].data<float>();
    a.bias = c.bias ? in.t[2].data<float>() : nullptr;
    a.residual = c.residual ? in.t[3].data<float>() + b * c.c * oh * ow : nullptr;
    a.y = y.data<float>() + b * c.c * oh * ow;
    a.m0 = 0;
    a.m1 = c.c;
    a.mg = 1;
    a.h = c.h;
    a.w = c.w;
    a.oh = oh;
    a.ow = ow;
    a.act = &act;
    a.scratch = scratch.p;
    fn(a);
  }
  return y;
}

// [n, c, h, w] -> [n, h, w, c].
std::vector<float> to_nhwc(const float* p, int64_t n, int64_t c, int64_t h, int64_t w) {
  std::vector<float> t(size_t(n * c * h * w));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t m = 0; m < c; ++m)
      for (int64_t i = 0; i < h * w; ++i)
        t[size_t((b * h * w + i) * c + m)] = p[(b * c + m) * h * w + i];
  return t;
}

// The channels-last kernel called directly on the case transposed to NHWC: per image, the
// output covered by calls on uneven row ranges times channel ranges (split at a multiple of
// the lanes where there are more), into NaN; the result transposed back to NCHW.
Tensor run_nhwc(const DwCase& c, const Inputs& in) {
  const int64_t oh = c.oh(), ow = c.ow();
  const cpu::DepthwiseNhwcFn fn = cpu::depthwise_nhwc_kernel(c.k, c.s);
  REQUIRE(fn != nullptr);
  const int64_t lanes = cpu::depthwise_channels_kernel(c.k, c.s, c.h, c.w, oh, ow).lanes;
  const cpu::Activation act = activation(c, in);
  const std::vector<float> x = to_nhwc(in.t[0].data<float>(), c.n, c.c, c.h, c.w);
  const std::vector<float> z =
      c.residual ? to_nhwc(in.t[3].data<float>(), c.n, c.c, oh, ow) : std::vector<float>();
  std::vector<float> y(size_t(c.n * oh * ow * c.c), std::numeric_limits<float>::quiet_NaN());
  const int64_t rows[] = {0, std::min<int64_t>(oh, 1), std::min<int64_t>(oh, oh / 2 + 1), oh};
  const int64_t half = lanes * ((c.c / lanes + 1) / 2);
  const int64_t chans[] = {0, c.c > lanes ? half : c.c, c.c};
  for (int64_t b = 0; b < c.n; ++b)
    for (int ri = 0; ri < 3; ++ri)
      for (int ci = 0; ci < 2; ++ci) {
        cpu::DepthwiseNhwc a;
        a.x = x.data() + b * c.h * c.w * c.c;
        a.weights = in.t[1].data<float>();
        a.bias = c.bias ? in.t[2].data<float>() : nullptr;
        a.residual = c.residual ? z.data() + b * oh * ow * c.c : nullptr;
        a.y = y.data() + b * oh * ow * c.c;
        a.c = c.c;
        a.c0 = chans[ci];
        a.c1 = chans[ci + 1];
        a.h = c.h;
        a.w = c.w;
        a.oh = oh;
        a.ow = ow;
        a.r0 = rows[ri];
        a.r1 = rows[ri + 1];
        a.act = &act;
        fn(a);
      }
  Tensor out(DType::f32, c.y());
  // Back to NCHW: the NHWC [n, oh, ow, c] read as an NCHW [n, oh * ow, c, 1], transposed.
  const std::vector<float> back = to_nhwc(y.data(), c.n, oh * ow, c.c, 1);
  std::copy(back.begin(), back.end(), out.data<float>());
  return out;
}

// Every channel count, plane, K and stride of the brief; bias, residual, activation, batch and
// weight kind cycle over the cases so that each meets many geometries.
std::vector<DwCase> all_cases() {
  const int64_t channels[] = {1, 7, 8, 9, 24, 33};
  // (On AVX-512 the 3x3 kernel takes blocks of up to 4 vectors of columns, the last masked:
  // 70 columns as 64 + 6, its loads masked at both edges of the row; 5x5 takes 32, 16 and 8
  // floats at a time: 28, 40 and 70 columns use different mixes of them before their scalar
  // tails. At stride 2, 131 columns make 66 outputs: a second block of 4 vectors, whose tap 0
  // starts from the first's.)
  // (16x16 and less: the channels-last 5x5 kernel's padded-plane windows of 8 or 4 columns.)
  const int64_t planes[][2] = {{1, 1},   {2, 3},   {7, 7},   {14, 14}, {15, 13},
                               {16, 16}, {28, 28}, {40, 37}, {6, 70},  {5, 131}};
  std::vector<DwCase> cases;
  int i = 0;
  for (int64_t k : {3, 5, 7})  // (7x7: ConvNeXt's; no channels-last kernel)
    for (int64_t s : {1, 2})
      for (const auto& hw : planes)
        for (int64_t c : channels) {
          DwCase d{};
          d.n = i % 5 == 0 ? 2 : 1;
          d.c = c;
          d.h = hw[0];
          d.w = hw[1];
          d.k = k;
          d.s = s;
          d.pad_end = k / 2;
          // Less padding after (stride 2): a padded window smaller than the padded plane.
          if (s == 2 && i % 7 == 3 && d.h > k && d.w > k) d.pad_end = 0;
          d.bias = i % 2 == 0;
          d.residual = i % 3 != 1;
          d.act = i % 4;  // none, Relu, Clip, Silu
          d.constant_weights = i % 6 != 5;
          cases.push_back(d);
          ++i;
        }
  return cases;
}

TEST_CASE("cpu depthwise kernels match a float64 convolution", "[cpu][conv][depthwise]") {
  double worst = 0;
  // The plane kernels are compiled per ISA level (8 or 16 floats per vector): each level this
  // CPU has, through the kernel and called directly.
  test::for_each_isa([&](cpu::Isa) {
    std::mt19937 rng(31);
    for (const DwCase& c : all_cases()) {
      INFO(describe(c));
      const Inputs in = make_inputs(c, rng);
      for (int threads : {1, 2, 3}) {
        INFO("cpu::ConvKernel, threads " << threads);
        const double e = rel_error(in, run_conv_kernel(c, in, threads));
        CHECK(e <= kRelBound);
        worst = std::max(worst, e);
      }
      {
        INFO("plane kernel");
        CHECK(rel_error(in, run_planes(c, in)) <= kRelBound);
      }
      {
        INFO("channels kernel");
        CHECK(rel_error(in, run_channels(c, in)) <= kRelBound);
      }
      if (c.k < 7) {
        INFO("nhwc kernel");
        CHECK(rel_error(in, run_nhwc(c, in)) <= kRelBound);
      }
    }
  });
  CAPTURE(worst);  // shown with -s: the measured error
  CHECK(worst > 0);
}

TEST_CASE("cpu depthwise nhwc: writes only its rows and channels, any padding after, dilated",
          "[cpu][conv][depthwise]") {
  CHECK(cpu::depthwise_nhwc_kernel(7, 1) == nullptr);
  CHECK(cpu::depthwise_nhwc_kernel(3, 3) == nullptr);
  CHECK(cpu::depthwise_nhwc_kernel(1, 1) == nullptr);
  // Channels, plane, and the channels to write (c0 not a multiple of the lanes). 256 channels:
  // pixels 1 KB apart, whose groups' input rows the kernel copies side by side first (on a
  // 30x40 plane in bands of output rows), the last group partial.
  struct Case {
    int64_t c, h, w, c0, c1;
  };
  const Case cases[] = {{37, 9, 8, 3, 29}, {256, 9, 8, 3, 250}, {256, 30, 40, 8, 256}};
  test::for_each_isa([&](cpu::Isa) {
    std::mt19937 rng(7);
    const float sentinel = 12345.f;
    for (const auto& [c, h, w, c0, c1] : cases)
      for (int64_t k : {3, 5})
        for (int64_t s : {1, 2})
          for (int64_t d : {1, 2, 3})      // the dilation (DeepLabv3's last blocks: 2)
            for (int act_kind : {2, 3}) {  // Clip, Silu (a clamp in registers, a smooth one after)
              // More output rows and columns than K / 2 * d padding after gives: all-padding ones.
              const int64_t p = k / 2 * d, span = (k - 1) * d + 1;
              const int64_t oh = (h + 2 * p - span) / s + 4, ow = (w + 2 * p - span) / s + 3;
              const int64_t r0 = 2, r1 = oh - 1;
              INFO("c " << c << " plane " << h << "x" << w << " K " << k << " stride " << s
                        << " dilation " << d << " activation " << act_kind);
              const cpu::DepthwiseNhwcFn fn = cpu::depthwise_nhwc_kernel(k, s);
              REQUIRE(fn != nullptr);
              const Tensor x = test::random_tensor(Shape{h, w, c}, rng);
              const Tensor wt = test::random_tensor(Shape{c, k * k}, rng);
              const Tensor bias = test::random_tensor(Shape{c}, rng);
              const Tensor z = test::random_tensor(Shape{oh, ow, c}, rng);
              cpu::Activation act;
              act.enabled = true;
              act.kind = act_kind == 2 ? cpu::Activation::Kind::Clamp : cpu::Activation::Kind::Silu;
              act.lo = -0.5f;
              act.hi = 0.75f;
              std::vector<float> y(size_t(oh * ow * c), sentinel);
              cpu::DepthwiseNhwc a;
              a.x = x.data<float>();
              a.weights = wt.data<float>();
              a.bias = bias.data<float>();
              a.residual = z.data<float>();
              a.y = y.data();
              a.c = c, a.c0 = c0, a.c1 = c1;
              a.h = h, a.w = w, a.oh = oh, a.ow = ow;
              a.r0 = r0, a.r1 = r1;
              a.act = &act;
              a.d = d;
              fn(a);
              double err = 0;
              int64_t outside_changed = 0;
              for (int64_t r = 0; r < oh; ++r)
                for (int64_t q = 0; q < ow; ++q)
                  for (int64_t m = 0; m < c; ++m) {
                    const float got = y[size_t((r * ow + q) * c + m)];
                    if (r < r0 || r >= r1 || m < c0 || m >= c1) {
                      outside_changed += got != sentinel;
                      continue;
                    }
                    double v = bias.data<float>()[m] + z.data<float>()[(r * ow + q) * c + m];
                    for (int64_t i = 0; i < k; ++i)
                      for (int64_t j = 0; j < k; ++j) {
                        const int64_t ih = r * s - p + i * d, iw = q * s - p + j * d;
                        if (ih >= 0 && ih < h && iw >= 0 && iw < w)
                          v += double(x.data<float>()[(ih * w + iw) * c + m]) *
                               wt.data<float>()[m * k * k + i * k + j];
                      }
                    v = act_kind == 2 ? std::min(std::max(v, -0.5), 0.75) : v / (1 + std::exp(-v));
                    const double e = std::abs(got - v);
                    if (!(e <= err)) err = std::isnan(e) ? INFINITY : e;
                  }
              CHECK(outside_changed == 0);
              CHECK(err <= 1e-5);
            }
  });
}

TEST_CASE("cpu depthwise: a channel multiplier reads the right input plane",
          "[cpu][conv][depthwise]") {
  // Through the registry's harness in cpu_kernels_test.cpp too; here with the plane sizes that
  // take the channel-interleaved kernel (2 output channels per input channel, 11 in all).
  std::mt19937 rng(4);
  for (int64_t s : {1, 2})
    for (int threads : {1, 3}) {
      INFO("stride " << s << ", threads " << threads);
      const int64_t c = 11, h = 9, w = 7;
      Tensor x = test::random_tensor(Shape{1, c, h, w}, rng);
      Tensor wt = test::random_tensor(Shape{2 * c, 1, 3, 3}, rng);
      Graph g;
      Attributes attrs;
      attrs.set("group", c);
      attrs.set("strides", std::vector<int64_t>{s, s});
      attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
      Node* node =
          g.add_node("Conv", "dw",
                     {g.add_input("x", DType::f32, x.shape()), g.add_constant("w", wt)}, 1, attrs);
      g.add_output(node->outputs[0]);
      g.infer_shapes();
      const Shape ys = node->outputs[0]->shape;
      REQUIRE(ys == Shape{1, 2 * c, (h - 1) / s + 1, (w - 1) / s + 1});
      std::vector<TensorInfo> infos{{true, DType::f32, x.shape(), nullptr},
                                    {true, DType::f32, wt.shape(), &wt}};
      PrepareContext pctx{*node, infos, {{true, DType::f32, ys, nullptr}}};
      pctx.threads = threads;
      cpu::ConvKernel kernel;
      kernel.prepare(pctx);
      Tensor y = nan_tensor(ys);
      Scratch ws(pctx.workspace_bytes / sizeof(float));
      RunContext rc;
      rc.inputs = {&x, &wt};
      rc.outputs = {&y};
      rc.workspace = ws.p;
      rc.threads = threads;
      kernel.run(rc);
      Tensor want = OpRegistry::global().get_op("", "Conv").reference(*node, {x, wt})[0];
      test::require_close(y, want);
    }
}

}  // namespace
}  // namespace minfer
