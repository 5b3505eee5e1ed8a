// Helpers for the int8 tests: random int8 tensors and running one op's reference kernel.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "test_util.h"

namespace minfer::test {

inline Tensor random_i8(Shape shape, std::mt19937& rng, int lo = -128, int hi = 127) {
  Tensor t(DType::i8, std::move(shape));
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(d(rng));
  return t;
}

inline Tensor random_i32(Shape shape, std::mt19937& rng, int lo, int hi) {
  Tensor t(DType::i32, std::move(shape));
  std::uniform_int_distribution<int> d(lo, hi);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<int32_t>()[i] = d(rng);
  return t;
}

// Runs the reference kernel of `op` on `inputs` (undefined tensors = absent inputs).
inline std::vector<Tensor> run_ref(const std::string& op, const std::string& domain,
                                   const std::vector<Tensor>& inputs, const Attributes& a,
                                   size_t outputs = 1) {
  Graph g;
  std::vector<Value*> vs;
  for (size_t i = 0; i < inputs.size(); ++i)
    vs.push_back(inputs[i].defined() ? g.add_constant("in" + std::to_string(i), inputs[i])
                                     : nullptr);
  Node* n = g.add_node(op, "node", vs, outputs, a, domain);
  return OpRegistry::global().get_op(domain, op).reference(*n, inputs);
}

// One NHWC QConv test: input [n,h,w,c], weights [m, c/group, kh, kw].
struct QConvShape {
  int64_t n, h, w, c, m, kh, kw, stride, pad, group, dilation;
};

// The shapes the QConv kernel tests cover: 1x1 and kxk, strides, pads, groups (depthwise
// too), dilation, odd channel counts, batch > 1.
inline constexpr QConvShape kQConvShapes[] = {
    {1, 8, 8, 16, 16, 3, 3, 1, 1, 1, 1},  {2, 7, 9, 3, 5, 3, 3, 1, 1, 1, 1},
    {1, 9, 9, 17, 33, 3, 3, 2, 1, 1, 1},  {3, 6, 5, 32, 24, 1, 1, 1, 0, 1, 1},
    {1, 11, 11, 16, 7, 1, 1, 2, 0, 1, 1}, {1, 10, 10, 12, 12, 3, 3, 1, 1, 12, 1},
    {2, 8, 8, 12, 18, 3, 3, 2, 1, 3, 1},  {1, 12, 12, 5, 6, 5, 5, 1, 2, 1, 1},
    {1, 9, 9, 8, 8, 3, 3, 1, 2, 1, 2},    {1, 5, 6, 64, 40, 3, 3, 1, 1, 1, 1},
    {2, 15, 15, 3, 16, 7, 7, 2, 3, 1, 1}, {4, 3, 3, 130, 67, 1, 1, 1, 0, 1, 1},
    // a 1x1 conv whose rows pass the weight blocks (the last a narrow one) in several sweeps
    // with a residual, the last sweep short
    {1, 20, 20, 16, 80, 1, 1, 1, 0, 1, 1},
    {1, 4, 4, 10, 10, 2, 3, 1, 0, 2, 1},  {1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1},
    // the implicit GEMM (whole lanes of channels, one group, more than one tap): output rows
    // of several tiles, batch > 1; stride 2; an input column no tap reads; 5x5; a plane
    // whose rows the threads cannot split evenly (they split the channels)
    {2, 16, 30, 8, 40, 3, 3, 1, 1, 1, 1}, {1, 14, 14, 12, 64, 3, 3, 2, 1, 1, 1},
    {1, 10, 20, 16, 32, 3, 3, 2, 0, 1, 1}, {1, 9, 13, 4, 16, 5, 5, 1, 2, 1, 1},
    {3, 3, 5, 4, 64, 3, 3, 1, 1, 1, 1},
    // its edge rows (kernel rows in the padding skipped): padding wider than the kernel, so
    // rows that read one, two or none of the image's rows
    {2, 2, 9, 8, 40, 3, 3, 1, 3, 1, 1},
    // and its edge columns (kernel columns in the padding skipped, the pixels in tiles down
    // the plane): 3x3 across two images, 5x5 (two columns a side), stride 2 (the left only)
    {2, 24, 44, 8, 40, 3, 3, 1, 1, 1, 1}, {1, 18, 40, 8, 24, 5, 5, 1, 2, 1, 1},
    {1, 28, 56, 8, 16, 3, 3, 2, 1, 1, 1},
    // a 3x3 stride-2 stem of 3 channels (MobileNet's, EfficientNet's): padded runs of 9 bytes
    {1, 17, 19, 3, 32, 3, 3, 2, 1, 1, 1},
    // grouped convs on the implicit GEMM (a copy per group): ResNeXt's 32 groups of 4 channels
    // with edge rows and columns; groups of 8 at stride 2, batch 2; 2 groups of 16 -> 32; groups
    // of 6 channels (runs that end inside a lane on the VNNI levels); 5x5 on 4 groups
    {1, 12, 20, 128, 128, 3, 3, 1, 1, 32, 1}, {2, 15, 13, 64, 64, 3, 3, 2, 1, 8, 1},
    {1, 14, 14, 32, 64, 3, 3, 1, 1, 2, 1},    {1, 9, 11, 18, 12, 3, 3, 1, 1, 3, 1},
    {1, 16, 24, 32, 32, 5, 5, 1, 2, 4, 1},
    // depthwise (the depthwise kernel): channel counts around the 8- and 16-lane vectors and
    // their pairs, strides, 5x5, dilation, a plane smaller than the kernel (3 images of 2 rows),
    // no padding (every pixel inside), rows of several 4-pixel tiles; rows wider than 32
    // pixels, whose edge pixels go one by one (narrower ones read padded copies of the rows).
    // The group rows: 64-channel transposes and a tail (85), blocks of 64 channels and a 16
    // (144), whole tiles and the last group's (12 columns), a kernel 5 rows by 3
    {2, 7, 9, 24, 24, 3, 3, 1, 1, 24, 1}, {1, 14, 13, 33, 33, 3, 3, 2, 1, 33, 1},
    {1, 9, 9, 20, 20, 5, 5, 1, 2, 20, 1}, {1, 6, 6, 8, 8, 5, 5, 2, 2, 8, 1},
    {1, 5, 5, 7, 7, 3, 3, 1, 1, 7, 2},    {3, 2, 3, 9, 9, 3, 3, 1, 1, 9, 1},
    {1, 6, 20, 85, 85, 3, 3, 1, 0, 85, 1}, {2, 9, 23, 48, 48, 3, 3, 2, 1, 48, 1},
    {2, 5, 37, 24, 24, 3, 3, 1, 1, 24, 1}, {1, 4, 70, 17, 17, 5, 5, 2, 2, 17, 1},
    {1, 5, 23, 144, 144, 3, 3, 2, 1, 144, 1}, {1, 7, 12, 32, 32, 5, 3, 1, 1, 32, 1}};

// The QConv variants the kernel tests cover: plain int8 output, Relu with a small output scale
// (multipliers >= 0.25, so the pre-shift path), the fused residual add, and float output.
enum class QConvVariant { Plain, ReluPreShift, Residual, FloatOut };
inline constexpr QConvVariant kQConvVariants[] = {QConvVariant::Plain, QConvVariant::ReluPreShift,
                                                  QConvVariant::Residual, QConvVariant::FloatOut};

// Random inputs {x, w, b} and the attributes of `s` in `variant`. For Residual the caller adds
// the residual input z (shaped like the output) with add_qconv_residual.
inline std::vector<Tensor> make_qconv(const QConvShape& s, QConvVariant variant,
                                      std::mt19937& rng, Attributes& a) {
  Tensor x = random_i8(Shape{s.n, s.h, s.w, s.c}, rng);
  Tensor w = random_i8(Shape{s.m, s.c / s.group, s.kh, s.kw}, rng, -127, 127);
  Tensor b = random_i32(Shape{s.m}, rng, -20000, 20000);
  if (variant == QConvVariant::ReluPreShift)  // accumulators past the pre-shift's clamp
    for (int64_t j = 0; j < s.m; j += 3) b.data<int32_t>()[j] += (j % 2 ? 1 : -1) * (1 << 30);
  std::vector<float> sw(s.m);
  for (auto& v : sw) v = std::uniform_real_distribution<float>(0.002f, 0.02f)(rng);
  a.set("layout", std::string("NHWC"));
  a.set("kernel_shape", std::vector<int64_t>{s.kh, s.kw});
  a.set("strides", std::vector<int64_t>{s.stride, s.stride});
  a.set("pads", std::vector<int64_t>{s.pad, s.pad, s.pad, s.pad});
  a.set("dilations", std::vector<int64_t>{s.dilation, s.dilation});
  a.set("group", s.group);
  a.set("x_scale", 0.04f);
  a.set("x_zero_point", int64_t{std::uniform_int_distribution<int>(-128, 127)(rng)});
  a.set("w_scale", sw);
  if (variant != QConvVariant::FloatOut) {
    a.set("y_scale", variant == QConvVariant::ReluPreShift ? 0.0001f : 0.5f);
    a.set("y_zero_point", int64_t{-7});
  }
  if (variant == QConvVariant::ReluPreShift) a.set("y_min", int64_t{-7});
  if (variant == QConvVariant::FloatOut) a.set("activation", std::string("Relu"));
  return {x, w, b};
}

// Appends the residual input (random, of the output's shape) and its attributes.
inline void add_qconv_residual(std::vector<Tensor>& inputs, const Shape& y_shape,
                               std::mt19937& rng, Attributes& a) {
  inputs.push_back(random_i8(y_shape, rng));
  a.set("conv_scale", 0.5f);
  a.set("conv_zero_point", int64_t{-7});
  a.set("conv_min", int64_t{-7});
  a.set("z_scale", 0.3f);
  a.set("z_zero_point", int64_t{12});
  a.set("y_scale", 0.6f);
  a.set("y_zero_point", int64_t{3});
  a.set("y_max", int64_t{100});
}

// A QConv case of `s` in `variant` for the kernel tests: its inputs (the residual appended for
// Residual), which of them are constant, its attributes.
struct QConvCase {
  std::vector<Tensor> inputs;
  std::vector<bool> constant;
  Attributes attrs;
};
inline QConvCase make_qconv_case(const QConvShape& s, QConvVariant variant, std::mt19937& rng) {
  QConvCase c;
  c.inputs = make_qconv(s, variant, rng, c.attrs);
  c.constant = {false, true, true};
  if (variant == QConvVariant::Residual) {
    const Shape y = run_ref("QConv", kMinferDomain, c.inputs, c.attrs)[0].shape();
    add_qconv_residual(c.inputs, y, rng, c.attrs);
    c.constant.push_back(false);
  }
  return c;
}

inline std::ostream& operator<<(std::ostream& o, const QConvShape& s) {
  return o << "n" << s.n << " h" << s.h << " w" << s.w << " c" << s.c << " m" << s.m << " k"
           << s.kh << "x" << s.kw << " s" << s.stride << " p" << s.pad << " g" << s.group << " d"
           << s.dilation;
}

inline const char* qconv_variant_name(QConvVariant v) {
  switch (v) {
    case QConvVariant::Plain: return "plain";
    case QConvVariant::ReluPreShift: return "relu + pre-shift";
    case QConvVariant::Residual: return "residual";
    case QConvVariant::FloatOut: return "float out";
  }
  return "?";
}

// Number of elements where two int8 tensors differ, and the largest difference.
struct Int8Diff {
  int64_t count = 0;
  int max = 0;
};
inline Int8Diff int8_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  Int8Diff d;
  for (int64_t i = 0; i < a.numel(); ++i) {
    int v = std::abs(int(a.data<int8_t>()[i]) - int(b.data<int8_t>()[i]));
    d.count += v != 0;
    d.max = std::max(d.max, v);
  }
  return d;
}

}  // namespace minfer::test
