// One harness for the fast CPU kernels (in the spirit of llama.cpp's test-backend-ops): for a
// node description (op, attributes, input shapes) it builds a one-node graph, fills random
// inputs, runs the op's reference kernel and the CPU kernel the registry picks (checking that
// it is the expected fast kernel, not the reference fallback), and compares the outputs.
//
// Tolerance: rtol 1e-4, atol 1e-5. The fast kernels accumulate in fp32 in a different order
// (GEMM blocking and FMA reassociation, vectorized exp) than the double-precision references.
#include <cstring>
#include <functional>
#include <limits>
#include <new>
#include <optional>
#include <sstream>

#include "backends/cpu/conv.h"
#include "backends/cpu/gemm.h"
#include "isa/for_each_isa.h"
#include "test_util.h"

namespace minfer {
namespace {

constexpr double kRtol = 1e-4, kAtol = 1e-5;

struct InputSpec {
  Shape shape;
  bool constant = false;        // an initializer: the kernel may pack it at prepare
  std::optional<Tensor> value;  // a fixed value (Clip bounds, Reshape shape); else random
  float lo = -1.f, hi = 1.f;    // range of random values
  bool absent = false;          // an absent optional input
};

struct OpCase {
  std::string op;
  Attributes attrs;
  std::vector<InputSpec> inputs;
  int threads = 1;
  std::string domain = "";  // "" (ONNX) or kMinferDomain for the fused ops
};

InputSpec in(Shape s, bool constant = false) {
  InputSpec i;
  i.shape = std::move(s);
  i.constant = constant;
  return i;
}
InputSpec absent() {
  InputSpec i;
  i.absent = true;
  return i;
}
InputSpec fixed(Tensor t, bool constant = true) {
  InputSpec i;
  i.shape = t.shape();
  i.value = std::move(t);
  i.constant = constant;
  return i;
}

std::string attr_string(const Attribute& a) {
  std::ostringstream s;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, float> ||
                      std::is_same_v<T, std::string>) {
          s << v;
        } else if constexpr (std::is_same_v<T, Tensor>) {
          s << v.to_string();
        } else {
          s << "[";
          for (size_t i = 0; i < v.size(); ++i) s << (i ? "," : "") << v[i];
          s << "]";
        }
      },
      a);
  return s.str();
}

std::string describe(const OpCase& c) {
  std::ostringstream s;
  s << c.op << "(";
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    s << (i ? ", " : "");
    if (c.inputs[i].absent) {
      s << "-";
      continue;
    }
    s << c.inputs[i].shape.to_string() << (c.inputs[i].constant ? "c" : "");
  }
  s << ")";
  for (const auto& [name, value] : c.attrs.all()) s << " " << name << "=" << attr_string(value);
  s << " threads=" << c.threads;
  return s.str();
}

Tensor random_input(const InputSpec& spec, DType dtype, std::mt19937& rng) {
  if (spec.value) return *spec.value;
  if (dtype == DType::i64) {
    Tensor t(DType::i64, spec.shape);
    std::uniform_int_distribution<int64_t> dist(-1000, 1000);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int64_t>()[i] = dist(rng);
    return t;
  }
  if (dtype == DType::i8) {
    Tensor t(DType::i8, spec.shape);
    std::uniform_int_distribution<int> dist(-128, 127);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<int8_t>()[i] = static_cast<int8_t>(dist(rng));
    return t;
  }
  return test::random_tensor(spec.shape, rng, spec.lo, spec.hi);
}

// Aligned scratch memory as the runtime provides it, poisoned so that reading it before
// writing it shows up as NaN.
struct Workspace {
  explicit Workspace(size_t bytes) : size(bytes) {
    if (bytes) {
      data = ::operator new(bytes, std::align_val_t(64));
      std::memset(data, 0xff, bytes);
    }
  }
  ~Workspace() {
    if (data) ::operator delete(data, std::align_val_t(64));
  }
  size_t size;
  void* data = nullptr;
};

// Prepares `kernel` on `node` and runs it; outputs start as NaN so unwritten ones fail.
// With over_input, output 0 starts as a copy of the input that the kernel says it may
// overwrite (PrepareContext::overwrites_input, if any) and takes that input's place, as a
// session plans it where the input dies at the node.
std::vector<Tensor> run_kernel(Kernel& kernel, const Node& node, std::vector<TensorInfo> infos,
                               std::vector<TensorInfo> outs, const std::vector<Tensor>& inputs,
                               int threads, bool over_input = false) {
  PrepareContext pctx{node, std::move(infos), std::move(outs)};
  pctx.threads = threads;
  kernel.prepare(pctx);
  std::vector<Tensor> outputs;
  for (const TensorInfo& o : pctx.outputs) {
    Tensor t(o.dtype, o.shape);
    if (o.dtype == DType::f32)
      std::fill(t.data<float>(), t.data<float>() + t.numel(),
                std::numeric_limits<float>::quiet_NaN());
    outputs.push_back(t);
  }
  Workspace ws(pctx.workspace_bytes);
  RunContext rc;
  for (const Tensor& t : inputs) rc.inputs.push_back(t.defined() ? &t : nullptr);
  if (over_input && pctx.overwrites_input >= 0) {
    outputs[0] = inputs[size_t(pctx.overwrites_input)].clone();
    rc.inputs[size_t(pctx.overwrites_input)] = &outputs[0];
  }
  for (Tensor& t : outputs) rc.outputs.push_back(&t);
  rc.workspace = ws.data;
  rc.threads = threads;
  kernel.run(rc);
  return outputs;
}

// Runs one case through the registry's CPU kernel and the reference; checks the kernel's
// name and that the outputs agree.
void check_op(const OpCase& c, const std::string& expected_kernel, std::mt19937& rng,
              DType dtype = DType::f32) {
  INFO(describe(c));
  Graph g;
  std::vector<Value*> values;
  std::vector<Tensor> tensors;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& spec = c.inputs[i];
    if (spec.absent) {
      values.push_back(nullptr);
      tensors.emplace_back();
      continue;
    }
    Tensor t = random_input(spec, i == 0 ? dtype : (spec.value ? spec.value->dtype() : dtype), rng);
    std::string name = "in" + std::to_string(i);
    values.push_back(spec.constant ? g.add_constant(name, t)
                                   : g.add_input(name, t.dtype(), t.shape()));
    tensors.push_back(t);
  }
  Node* node = g.add_node(c.op, "node", values, 1, c.attrs, c.domain);
  g.add_output(node->outputs[0]);
  g.infer_shapes();

  std::vector<TensorInfo> infos;
  for (size_t i = 0; i < values.size(); ++i) {
    TensorInfo info;
    if (values[i]) {
      info.present = true;
      info.dtype = values[i]->dtype;
      info.shape = values[i]->shape;
      if (values[i]->is_constant()) info.constant = &*values[i]->constant;
    }
    infos.push_back(info);
  }
  TensorInfo out;
  out.present = true;
  out.dtype = node->outputs[0]->dtype;
  out.shape = node->outputs[0]->shape;

  PrepareContext probe{*node, infos, {out}};
  probe.threads = c.threads;
  const KernelDef* def = OpRegistry::global().find_kernel(probe, Device::Type::CPU);
  REQUIRE(def != nullptr);
  REQUIRE(def->name == expected_kernel);
  std::unique_ptr<Kernel> kernel = def->create();
  std::vector<Tensor> got = run_kernel(*kernel, *node, infos, {out}, tensors, c.threads);

  const OpSchema& schema = OpRegistry::global().get_op(c.domain, c.op);
  std::vector<Tensor> want = schema.reference(*node, tensors);
  REQUIRE(got[0].shape() == want[0].shape());
  if (dtype == DType::f32) {
    // Within 1e-6 of the output's largest magnitude absolutely: sums of many terms (a 1x1
    // conv of 600 channels) that cancel to near 0 keep the rounding of their large terms, and
    // a kernel's summation order (Eigen blocks by the CPU's cache sizes) moves it.
    double scale = 0;
    for (int64_t i = 0; i < want[0].numel(); ++i)
      if (std::isfinite(want[0].data<float>()[i]))
        scale = std::max(scale, std::abs(double(want[0].data<float>()[i])));
    test::require_close(got[0], want[0], kRtol, std::max(kAtol, 1e-6 * scale));
  } else {
    REQUIRE(std::memcmp(got[0].raw(), want[0].raw(), got[0].nbytes()) == 0);
  }
}

// ---- random case generators ----------------------------------------------------------------

struct Rand {
  std::mt19937& rng;
  int64_t operator()(int64_t lo, int64_t hi) {  // inclusive
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
  template <typename T>
  T pick(std::initializer_list<T> v) {
    return *(v.begin() + (*this)(0, int64_t(v.size()) - 1));
  }
};

// A random valid Conv: groups (incl. depthwise), strides 1-3, dilations, asymmetric pads or
// auto_pad, 1-D or 2-D, optional bias, constant or run-time weights.
OpCase random_conv(Rand& r) {
  OpCase c;
  c.op = "Conv";
  const int kind = int(r(0, 3));  // 0, 1: group 1; 2: grouped; 3: depthwise
  int64_t group = kind == 2 ? r(2, 3) : kind == 3 ? r(2, 6) : 1;
  int64_t cg = kind == 3 ? 1 : r(1, 6), mg = kind == 3 ? r(1, 2) : r(1, kind == 2 ? 4 : 9);
  const size_t rank = r.chance(0.12) ? 1 : 2;
  std::vector<int64_t> k(rank), s(rank), d(rank), size(rank), pads(2 * rank, 0);
  std::string auto_pad = "NOTSET";
  if (r.chance(0.2)) auto_pad = r.pick<std::string>({"SAME_UPPER", "SAME_LOWER", "VALID"});
  for (size_t i = 0; i < rank; ++i) {
    k[i] = r.pick<int64_t>({1, 1, 2, 3, 3, 5});
    s[i] = r.chance(0.6) ? 1 : r(2, 3);
    d[i] = r.chance(0.8) ? 1 : 2;
    if (auto_pad == "NOTSET") pads[i] = r(0, 2), pads[i + rank] = r(0, 2);
    const int64_t ek = (k[i] - 1) * d[i] + 1;
    size[i] = std::max(r(1, 14), ek - pads[i] - pads[i + rank]);
  }
  const int64_t n = r(1, 3);
  std::vector<int64_t> xs{n, cg * group}, ws{mg * group, cg};
  xs.insert(xs.end(), size.begin(), size.end());
  ws.insert(ws.end(), k.begin(), k.end());
  const bool wconst = r.chance(0.7);
  c.inputs = {in(Shape(xs)), in(Shape(ws), wconst)};
  if (r.chance(0.6)) c.inputs.push_back(in(Shape{mg * group}, wconst));
  if (group > 1 || r.chance(0.3)) c.attrs.set("group", group);
  c.attrs.set("strides", s);
  if (r.chance(0.5) || d != std::vector<int64_t>(rank, 1)) c.attrs.set("dilations", d);
  if (auto_pad != "NOTSET")
    c.attrs.set("auto_pad", auto_pad);
  else
    c.attrs.set("pads", pads);
  if (r.chance(0.5)) c.attrs.set("kernel_shape", k);
  c.threads = int(r(1, 3));
  return c;
}

Attributes conv_attrs(std::vector<int64_t> strides, std::vector<int64_t> pads, int64_t group = 1) {
  Attributes a;
  a.set("strides", std::move(strides));
  a.set("pads", std::move(pads));
  a.set("group", group);
  return a;
}

// Pool: kernel 1-4, strides, pads below the kernel, dilations (MaxPool), ceil_mode,
// count_include_pad (AveragePool), auto_pad.
OpCase random_pool(Rand& r, const std::string& op) {
  OpCase c;
  c.op = op;
  const size_t rank = r.chance(0.15) ? 1 : 2;
  std::vector<int64_t> k(rank), s(rank), d(rank, 1), size(rank), pads(2 * rank, 0);
  std::string auto_pad =
      r.chance(0.15) ? r.pick<std::string>({"SAME_UPPER", "SAME_LOWER", "VALID"}) : "NOTSET";
  for (size_t i = 0; i < rank; ++i) {
    k[i] = r(1, 4);
    s[i] = r(1, 3);
    if (op == "MaxPool" && r.chance(0.2)) d[i] = 2;
    if (auto_pad == "NOTSET") pads[i] = r(0, k[i] - 1), pads[i + rank] = r(0, k[i] - 1);
    size[i] = std::max(r(1, 13), (k[i] - 1) * d[i] + 1);
  }
  std::vector<int64_t> xs{r(1, 2), r(1, 5)};
  xs.insert(xs.end(), size.begin(), size.end());
  c.inputs = {in(Shape(xs))};
  c.attrs.set("kernel_shape", k);
  c.attrs.set("strides", s);
  if (auto_pad != "NOTSET")
    c.attrs.set("auto_pad", auto_pad);
  else
    c.attrs.set("pads", pads);
  if (d != std::vector<int64_t>(rank, 1)) c.attrs.set("dilations", d);
  if (auto_pad == "NOTSET" && r.chance(0.4)) c.attrs.set("ceil_mode", int64_t{1});
  if (op == "AveragePool" && r.chance(0.5)) c.attrs.set("count_include_pad", int64_t{1});
  c.threads = int(r(1, 3));
  return c;
}

Shape random_shape(Rand& r, size_t rank, int64_t max_dim) {
  std::vector<int64_t> d(rank);
  for (auto& x : d) x = r(1, max_dim);
  return Shape(d);
}

// An operand that broadcasts to `out`: some dims set to 1, maybe leading dims dropped.
Shape broadcast_operand(Rand& r, const Shape& out) {
  std::vector<int64_t> d = out.dims();
  for (auto& x : d)
    if (r.chance(0.35)) x = 1;
  size_t drop = r.chance(0.3) ? size_t(r(0, int64_t(d.size()))) : 0;
  d.erase(d.begin(), d.begin() + drop);
  return Shape(d);
}

// ---- tests ---------------------------------------------------------------------------------

TEST_CASE("cpu Conv matches the reference over random geometries", "[cpu]") {
  std::mt19937 rng(1234);
  Rand r{rng};
  for (int i = 0; i < 120; ++i) check_op(random_conv(r), "cpu-conv", rng);
}

TEST_CASE("cpu Conv paths: 1x1 GEMM, im2col tiles, shared units, depthwise", "[cpu]") {
  struct ConvSpec {
    const char* what;
    Shape x, w;
    std::vector<int64_t> strides, pads;
    int64_t group;
    bool bias, constant;
  };
  const ConvSpec specs[] = {
      {"1x1 stride 1 unpadded: a GEMM on the input",
       {1, 16, 20, 20},
       {24, 16, 1, 1},
       {1, 1},
       {0, 0, 0, 0},
       1,
       true,
       true},
      {"the same with 2 tiles of positions",
       {1, 600, 15, 20},
       {12, 600, 1, 1},
       {1, 1},
       {0, 0, 0, 0},
       1,
       true,
       true},
      {"grouped 1x1, run-time weights",
       {3, 8, 9, 7},
       {6, 4, 1, 1},
       {1, 1},
       {0, 0, 0, 0},
       2,
       false,
       false},
      {"1x1 stride 2 (ResNet downsample)",
       {2, 12, 15, 15},
       {20, 12, 1, 1},
       {2, 2},
       {0, 0, 0, 0},
       1,
       false,
       true},
      {"one unit per image: shared im2col, split channels (11 rows: not Winograd's)",
       {1, 8, 11, 17},
       {21, 8, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       1,
       true,
       true},
      {"deep K (several depth blocks), small image",
       {1, 70, 5, 6},
       {40, 70, 3, 3},
       {1, 1},
       {1, 0, 2, 1},
       1,
       false,
       true},
      {"2 tiles per image, several images (11 rows: not Winograd's)",
       {2, 64, 11, 30},
       {8, 64, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       1,
       true,
       true},
      {"many output channels: several blocks of packed weights",
       {1, 300, 7, 7},
       {700, 300, 1, 1},
       {1, 1},
       {0, 0, 0, 0},
       1,
       true,
       true},
      {"stem-like 7x7 stride 2", {1, 3, 30, 30}, {8, 3, 7, 7}, {2, 2}, {3, 3, 3, 3}, 1, true, true},
      {"depthwise 3x3", {2, 16, 13, 11}, {16, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}, 16, true, true},
      {"depthwise stride 2, run-time weights",
       {1, 10, 14, 14},
       {10, 1, 3, 3},
       {2, 2},
       {1, 1, 1, 1},
       10,
       false,
       false},
      {"depthwise, channel multiplier 2",
       {1, 5, 9, 9},
       {10, 1, 5, 3},
       {1, 2},
       {2, 0, 1, 2},
       5,
       false,
       true},
      // The vectorized plane kernels (depthwise.h): 3x3 and 5x5, stride 1 and 2, even and odd
      // sizes, less padding after than before, a channel multiplier.
      {"depthwise plane 3x3 stride 1",
       {2, 6, 17, 23},
       {6, 1, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       6,
       true,
       true},
      {"depthwise plane 3x3 stride 2, odd size",
       {1, 4, 15, 21},
       {4, 1, 3, 3},
       {2, 2},
       {1, 1, 1, 1},
       4,
       true,
       true},
      {"depthwise plane 3x3 stride 2, no padding after",
       {1, 4, 16, 16},
       {4, 1, 3, 3},
       {2, 2},
       {1, 1, 0, 0},
       4,
       true,
       false},
      {"depthwise plane 5x5 stride 1",
       {1, 3, 12, 9},
       {3, 1, 5, 5},
       {1, 1},
       {2, 2, 2, 2},
       3,
       false,
       true},
      {"depthwise plane 5x5 stride 2, multiplier 2",
       {2, 3, 19, 14},
       {6, 1, 5, 5},
       {2, 2},
       {2, 2, 2, 2},
       3,
       true,
       true},
      {"depthwise plane 3x3 on a 1x1 image",
       {1, 8, 1, 1},
       {8, 1, 3, 3},
       {1, 1},
       {1, 1, 1, 1},
       8,
       true,
       true},
  };
  std::mt19937 rng(99);
  for (int threads : {1, 2, 3})
    for (const ConvSpec& c : specs) {
      INFO(c.what);
      OpCase oc{
          "Conv", conv_attrs(c.strides, c.pads, c.group), {in(c.x), in(c.w, c.constant)}, threads};
      if (c.bias) oc.inputs.push_back(in(Shape{c.w[0]}, c.constant));
      check_op(oc, "cpu-conv", rng);
    }
}

// The epilogue that com.minfer:FusedConv will use: bias, residual, Relu/Clip in one pass.
TEST_CASE("cpu Conv kernel fuses residual add and activation", "[cpu]") {
  std::mt19937 rng(7);
  Rand r{rng};
  std::vector<OpCase> cases;
  for (int i = 0; i < 40; ++i) cases.push_back(random_conv(r));
  // 1x1 depthwise convs (a BatchNormalization before a Relu: batchnorm-to-depthwise), whose
  // scale and shift run in one pass per plane.
  for (int threads : {1, 2})
    for (int64_t c : {1, 13})
      cases.push_back({"Conv",
                       conv_attrs({1, 1}, {0, 0, 0, 0}, c),
                       {in({2, c, 5, 7}), in({c, 1, 1, 1}, true), in({c}, true)},
                       threads});
  for (const OpCase& c : cases) {
    INFO(describe(c));
    // Plain Conv as the oracle: its reference output, plus Z, then clamped.
    Graph g;
    std::vector<Value*> vals;
    std::vector<Tensor> tensors;
    for (size_t k = 0; k < c.inputs.size(); ++k) {
      Tensor t = random_input(c.inputs[k], DType::f32, rng);
      tensors.push_back(t);
      vals.push_back(g.add_input("in" + std::to_string(k), DType::f32, t.shape()));
    }
    Node* conv = g.add_node("Conv", "conv", vals, 1, c.attrs);
    g.infer_shapes();
    const Shape ys = conv->outputs[0]->shape;
    Tensor want = OpRegistry::global().get_op("", "Conv").reference(*conv, tensors)[0];

    const int act = int(r(0, 2));  // none, Relu, Clip
    Node fused;
    fused.name = "fused";
    fused.op_type = "FusedConv";
    fused.domain = kMinferDomain;
    fused.attrs = c.attrs;
    float lo = -INFINITY, hi = INFINITY;
    if (act == 1) {
      fused.attrs.set("activation", std::string("Relu"));
      lo = 0.f;
    } else if (act == 2) {
      lo = -0.5f;
      hi = 0.75f;
      fused.attrs.set("activation", std::string("Clip"));
      fused.attrs.set("activation_min", lo);
      fused.attrs.set("activation_max", hi);
    }
    const bool residual = r.chance(0.7);
    std::vector<TensorInfo> infos;
    for (const Tensor& t : tensors) infos.push_back({true, DType::f32, t.shape(), nullptr});
    while (tensors.size() < 3) tensors.emplace_back(), infos.push_back({});
    if (residual) {
      Tensor z = test::random_tensor(ys, rng);
      const float* zp = z.data<float>();
      float* wp = want.data<float>();
      for (int64_t k = 0; k < want.numel(); ++k) wp[k] += zp[k];
      tensors.push_back(z);
      infos.push_back({true, DType::f32, ys, nullptr});
    }
    float* wp = want.data<float>();
    for (int64_t k = 0; k < want.numel(); ++k) wp[k] = std::min(std::max(wp[k], lo), hi);

    cpu::ConvKernel kernel;
    std::vector<Tensor> got =
        run_kernel(kernel, fused, infos, {{true, DType::f32, ys, nullptr}}, tensors, c.threads);
    test::require_close(got[0], want, kRtol, kAtol);
    // Written over the residual where the kernel's path allows it (not the depthwise ones).
    if (residual) {
      std::vector<Tensor> over = run_kernel(kernel, fused, infos, {{true, DType::f32, ys, nullptr}},
                                            tensors, c.threads, true);
      REQUIRE(std::memcmp(over[0].raw(), got[0].raw(), got[0].nbytes()) == 0);
    }
  }
}

TEST_CASE("cpu Conv kernel rejects an unknown fused activation", "[cpu]") {
  Node n;
  n.name = "f";
  n.op_type = "FusedConv";
  n.attrs.set("activation", std::string("Mish"));
  std::vector<TensorInfo> infos{{true, DType::f32, Shape{1, 2, 4, 4}, nullptr},
                                {true, DType::f32, Shape{3, 2, 1, 1}, nullptr}};
  PrepareContext ctx{n, infos, {{true, DType::f32, Shape{1, 3, 4, 4}, nullptr}}};
  cpu::ConvKernel kernel;
  REQUIRE_THROWS_AS(kernel.prepare(ctx), Error);
}

TEST_CASE("cpu Gemm matches the reference: transposes, alpha/beta, C broadcasts", "[cpu]") {
  std::mt19937 rng(42);
  Rand r{rng};
  for (int i = 0; i < 60; ++i) {
    const int64_t m = r(1, 40), n = r(1, 40), k = r(1, 40);
    const bool ta = r.chance(0.5), tb = r.chance(0.5);
    OpCase c;
    c.op = "Gemm";
    if (ta) c.attrs.set("transA", int64_t{1});
    if (tb) c.attrs.set("transB", int64_t{1});
    if (r.chance(0.4)) c.attrs.set("alpha", 0.5f + float(r(0, 10)) / 10.f);
    if (r.chance(0.4)) c.attrs.set("beta", float(r(-10, 10)) / 10.f);
    c.inputs = {in(ta ? Shape{k, m} : Shape{m, k}),
                in(tb ? Shape{n, k} : Shape{k, n}, r.chance(0.5))};
    switch (r(0, 6)) {
      case 0:
        break;
      case 1:
        c.inputs.push_back(in({n}, true));
        break;
      case 2:
        c.inputs.push_back(in({1, n}));
        break;
      case 3:
        c.inputs.push_back(in({m, 1}));
        break;
      case 4:
        c.inputs.push_back(in({m, n}));
        break;
      case 5:
        c.inputs.push_back(in({1}));
        break;
      default:
        c.inputs.push_back(in(Shape{}));
        break;
    }
    c.threads = int(r(1, 3));
    check_op(c, "cpu-eigen-gemm", rng);
  }
  // Large enough to be split over threads; and a classifier-like matrix-vector product.
  Attributes tb;
  tb.set("transB", int64_t{1});
  for (int threads : {1, 2}) {
    check_op({"Gemm", {}, {in({130, 70}), in({70, 150}), in({150}, true)}, threads},
             "cpu-eigen-gemm", rng);
    check_op({"Gemm", tb, {in({150, 70}), in({130, 70}, true), in({130}, true)}, threads},
             "cpu-eigen-gemm", rng);
    check_op({"Gemm", tb, {in({1, 300}), in({70, 300}, true), in({70}, true)}, threads},
             "cpu-eigen-gemm", rng);
  }
}

TEST_CASE("cpu Gemm kernel fuses an activation", "[cpu]") {
  std::mt19937 rng(5);
  for (const char* act : {"Relu", "Clip"}) {
    Graph g;
    Tensor a = test::random_tensor({9, 13}, rng), b = test::random_tensor({13, 11}, rng);
    Tensor cc = test::random_tensor({11}, rng);
    Node* n = g.add_node("Gemm", "gemm",
                         {g.add_input("a", DType::f32, a.shape()), g.add_constant("b", b),
                          g.add_input("c", DType::f32, cc.shape())});
    g.infer_shapes();
    Tensor want = OpRegistry::global().get_op("", "Gemm").reference(*n, {a, b, cc})[0];
    const float lo = std::string(act) == "Relu" ? 0.f : -0.3f;
    const float hi = std::string(act) == "Relu" ? INFINITY : 0.4f;
    for (int64_t i = 0; i < want.numel(); ++i)
      want.data<float>()[i] = std::min(std::max(want.data<float>()[i], lo), hi);
    Node fused = *n;
    fused.op_type = "FusedGemm";
    fused.domain = kMinferDomain;
    fused.attrs.set("activation", std::string(act));
    fused.attrs.set("activation_min", -0.3f);
    fused.attrs.set("activation_max", 0.4f);
    cpu::GemmKernel kernel;
    std::vector<TensorInfo> infos{{true, DType::f32, a.shape(), nullptr},
                                  {true, DType::f32, b.shape(), &b},
                                  {true, DType::f32, cc.shape(), nullptr}};
    auto got = run_kernel(kernel, fused, infos, {{true, DType::f32, Shape{9, 11}, nullptr}},
                          {a, b, cc}, 2);
    test::require_close(got[0], want, kRtol, kAtol);
  }
}

TEST_CASE("cpu MatMul matches the reference: 1-D, batched, broadcast", "[cpu]") {
  std::mt19937 rng(8);
  const std::vector<std::pair<Shape, Shape>> shapes{
      {{7}, {7}},
      {{5}, {5, 3}},
      {{4, 5}, {5}},
      {{6, 9}, {9, 4}},
      {{3, 6, 9}, {9, 4}},         // one B: folded into a taller GEMM
      {{3, 6, 9}, {3, 9, 4}},      // batched
      {{2, 1, 6, 9}, {3, 9, 4}},   // broadcast batch dims
      {{6, 9}, {2, 3, 9, 5}},      // A broadcast over B's batch
      {{4, 1, 5}, {1, 5, 130}},    // matrix-vector rows
      {{2, 70, 40}, {2, 40, 60}},  // large enough for threads
  };
  for (int threads : {1, 2, 3})
    for (const auto& [a, b] : shapes)
      check_op({"MatMul", {}, {in(a), in(b, threads == 2)}, threads}, "cpu-eigen-matmul", rng);
  // The rest runs on PackedRhs, once per ISA level this CPU has (tiles of 16 or 32 columns).
  test::for_each_isa([&](cpu::Isa) {
    // Constant weights [K, N] (packed once): tails of the tile in M and N (an odd number of
    // 16-column panels), K past one depth block (256), N past one slice of 8 panels (128
    // columns), 1-3 threads, and ViT's shapes; rows enough to be split over 2 and 3 threads;
    // slices narrowed until the threads share them evenly (320 columns); 7-16 rows (one tall
    // tile on AVX-512) with K over three depth blocks, and 16 rows 4 KB apart (on one L1 set:
    // the 6-row tiles).
    const std::vector<std::pair<Shape, Shape>> weights{
        {{2, 3}, {3, 1}},         {{7, 5}, {5, 17}},        {{1, 13, 300}, {300, 33}},
        {{2, 100, 40}, {40, 64}}, {{197, 768}, {768, 40}},  {{1, 50, 513}, {513, 130}},
        {{1, 29, 520}, {520, 300}}, {{197, 64}, {64, 1000}}, {{9, 20}, {20, 80}},
        {{1, 301, 100}, {100, 60}}, {{1, 49, 300}, {300, 320}}, {{1, 16, 600}, {600, 47}},
        {{16, 1024}, {1024, 20}},
    };
    for (int threads : {1, 2, 3})
      for (const auto& [a, b] : weights)
        check_op({"MatMul", {}, {in(a), in(b, true)}, threads}, "cpu-eigen-matmul", rng);
    // FusedMatMul: the bias and an activation (Gelu, Relu) in PackedRhs's epilogue (constant B)
    // or in one more pass (run-time B); tails of the tile and of a slice, K past a depth block,
    // rows split over the threads.
    for (const char* act : {"Gelu", "GeluTanh", "Relu", ""}) {
      Attributes a;
      a.set("activation", std::string(act));
      for (int threads : {1, 2, 3})
        for (const auto& [x, w] : std::vector<std::pair<Shape, Shape>>{
                 {{1, 13, 300}, {300, 33}}, {{2, 29, 40}, {40, 150}}, {{1, 7, 5}, {5, 3}},
                 {{1, 200, 40}, {40, 70}}}) {
          InputSpec xs = in(x);
          xs.lo = -3.f, xs.hi = 3.f;
          const InputSpec bias = in({w[1]}, true);
          for (bool constant : {true, false})
            check_op({"FusedMatMul", a, {xs, in(w, constant), bias}, threads, kMinferDomain},
                     "cpu-eigen-matmul", rng);
        }
    }
    // Each batch's own B packed at run time (8 rows or more): tails of the tile, broadcast batch
    // dims, attention's shapes, no depth.
    const std::vector<std::pair<Shape, Shape>> batched{
        {{12, 20, 16}, {12, 16, 37}},
        {{2, 1, 9, 9}, {3, 9, 20}},
        {{3, 197, 64}, {3, 64, 197}},
        {{2, 10, 0}, {2, 0, 5}},
    };
    for (int threads : {1, 2, 3})
      for (const auto& [a, b] : batched)
        check_op({"MatMul", {}, {in(a), in(b)}, threads}, "cpu-eigen-matmul", rng);
  });
}

TEST_CASE("cpu unary ops match the reference", "[cpu]") {
  std::mt19937 rng(3);
  Rand r{rng};
  for (int i = 0; i < 12; ++i) {
    const int threads = int(r(1, 3));
    // Some large enough (> 32K elements) to be split over threads.
    Shape s = i % 3 == 0 ? Shape{2, 200, 91} : random_shape(r, size_t(r(0, 4)), 9);
    InputSpec x = in(s);
    x.lo = -8.f, x.hi = 8.f;
    check_op({"Relu", {}, {x}, threads}, "cpu-relu", rng);
    check_op({"Sigmoid", {}, {x}, threads}, "cpu-sigmoid", rng);
    // Clip: bounds as inputs (constant or not, either absent) or as opset-6 attributes.
    Tensor lo = Tensor::scalar(-0.5f * float(r(0, 4))), hi = Tensor::scalar(0.5f * float(r(0, 4)));
    check_op({"Clip", {}, {x, fixed(lo), fixed(hi, false)}, threads}, "cpu-clip", rng);
    check_op({"Clip", {}, {x, absent(), fixed(hi)}, threads}, "cpu-clip", rng);
    check_op({"Clip", {}, {x, fixed(lo)}, threads}, "cpu-clip", rng);
    Attributes a;
    a.set("min", -1.5f);
    a.set("max", 2.f);
    check_op({"Clip", a, {x}, threads}, "cpu-clip", rng);
  }
}

TEST_CASE("cpu Add/Sub/Mul/Div match the reference over broadcast patterns", "[cpu]") {
  std::mt19937 rng(11);
  Rand r{rng};
  const std::pair<const char*, const char*> ops[] = {
      {"Add", "cpu-add"}, {"Sub", "cpu-sub"}, {"Mul", "cpu-mul"}, {"Div", "cpu-div"}};
  auto check_all = [&](InputSpec a, InputSpec b, int threads) {
    b.lo = 0.5f, b.hi = 2.f;  // keep Div away from zero
    for (const auto& [op, kernel] : ops) check_op({op, {}, {a, b}, threads}, kernel, rng);
  };
  for (int i = 0; i < 40; ++i) {
    Shape out = random_shape(r, size_t(r(1, 5)), 6);
    Shape a = broadcast_operand(r, out), b = broadcast_operand(r, out);
    if (r.chance(0.5)) std::swap(a, b);
    check_all(in(a), in(b, r.chance(0.3)), int(r(1, 3)));
  }
  for (int threads : {1, 2}) {
    check_all(in({2, 16, 45, 47}), in({2, 16, 45, 47}), threads);   // same shape
    check_all(in({2, 16, 45, 47}), in({16, 1, 1}, true), threads);  // per channel
    check_all(in({1, 16, 1, 1}), in({2, 16, 45, 47}), threads);     // per channel, swapped
    check_all(in({2, 16, 45, 47}), in(Shape{}, true), threads);     // scalar
    check_all(in({1}), in({3, 5}), threads);                        // scalar, swapped
    check_all(in({40, 1, 30}), in({1, 50, 30}), threads);           // both broadcast
    check_all(in({1, 1}), in({1}), threads);                        // a single element
  }
}

TEST_CASE("cpu MaxPool and AveragePool match the reference", "[cpu]") {
  std::mt19937 rng(21);
  Rand r{rng};
  for (int i = 0; i < 60; ++i) {
    check_op(random_pool(r, "MaxPool"), "cpu-maxpool", rng);
    check_op(random_pool(r, "AveragePool"), "cpu-avgpool", rng);
  }
  Attributes stem;  // ResNet's stem pool
  stem.set("kernel_shape", std::vector<int64_t>{3, 3});
  stem.set("strides", std::vector<int64_t>{2, 2});
  stem.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  for (int threads : {1, 2}) {
    check_op({"MaxPool", stem, {in({2, 8, 56, 56})}, threads}, "cpu-maxpool", rng);
    check_op({"AveragePool", stem, {in({2, 8, 56, 56})}, threads}, "cpu-avgpool", rng);
  }
  // GoogLeNet's: 3x3 stride 1 on small planes, 3x3 stride 2 in ceil mode.
  Attributes same = stem;
  same.set("strides", std::vector<int64_t>{1, 1});
  Attributes ceil = stem;
  ceil.set("pads", std::vector<int64_t>{0, 0, 0, 0});
  ceil.set("ceil_mode", int64_t{1});
  for (const Shape& s : {Shape{1, 40, 4, 4}, Shape{1, 24, 8, 8}, Shape{1, 7, 2, 2}})
    check_op({"MaxPool", same, {in(s)}, 2}, "cpu-maxpool", rng);
  check_op({"MaxPool", ceil, {in({1, 16, 15, 15})}, 2}, "cpu-maxpool", rng);
}

TEST_CASE("cpu pools' vector loops match the reference at every ISA level", "[cpu]") {
  // backends/cpu/isa/pool_rows.cpp: the flat path's taps over blocks of small planes, the row
  // path's rows and its columns at strides 1 and 2, each with a last partial vector.
  std::mt19937 rng(37);
  auto pool = [](int64_t k, int64_t s, int64_t pad, bool ceil, bool include_pad) {
    Attributes a;
    a.set("kernel_shape", std::vector<int64_t>{k, k});
    a.set("strides", std::vector<int64_t>{s, s});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    if (ceil) a.set("ceil_mode", int64_t{1});
    if (include_pad) a.set("count_include_pad", int64_t{1});
    return a;
  };
  struct PoolCase {
    Attributes attrs;
    Shape x;
  };
  const PoolCase cases[] = {
      {pool(3, 1, 1, false, false), {1, 7, 17, 17}},     // flat (Inception v3's 17x17)
      {pool(3, 1, 1, false, true), {2, 5, 7, 7}},        // flat, several planes a block
      {pool(3, 1, 1, false, false), {1, 3, 35, 35}},     // rows, stride 1
      {pool(3, 2, 0, true, false), {1, 4, 35, 35}},      // rows, stride 2, ceil mode
      {pool(3, 2, 1, false, false), {1, 3, 111, 111}},   // SqueezeNet's, odd rows
      {pool(2, 2, 0, false, false), {1, 2, 40, 46}},     // VGG's 2x2
      {pool(3, 2, 1, false, true), {1, 2, 56, 57}},      // ResNet's stem, one odd side
  };
  test::for_each_isa([&](cpu::Isa) {
    for (const PoolCase& c : cases)
      for (int threads : {1, 2}) {
        check_op({"MaxPool", c.attrs, {in(c.x)}, threads}, "cpu-maxpool", rng);
        check_op({"AveragePool", c.attrs, {in(c.x)}, threads}, "cpu-avgpool", rng);
      }
  });
}

TEST_CASE("cpu GlobalAveragePool, BatchNormalization, Softmax match the reference", "[cpu]") {
  std::mt19937 rng(31);
  Rand r{rng};
  for (int threads : {1, 2, 3}) {
    for (Shape s : {Shape{1, 2048, 7, 7}, Shape{2, 3, 5}, Shape{2, 3, 2, 3, 4}, Shape{1, 1, 1, 1}})
      check_op({"GlobalAveragePool", {}, {in(s)}, threads}, "cpu-global-avgpool", rng);
    for (Shape s : {Shape{2, 5, 7, 9}, Shape{3, 4}, Shape{2, 6, 11}, Shape{1, 64, 40, 40}}) {
      const int64_t c = s[1];
      const bool constant = threads != 2;
      InputSpec var = in({c}, constant);
      var.lo = 0.1f, var.hi = 2.f;
      Attributes a;
      if (threads == 3) a.set("epsilon", 1e-3f);
      check_op({"BatchNormalization",
                a,
                {in(s), in({c}, constant), in({c}, constant), in({c}, constant), var},
                threads},
               "cpu-batchnorm", rng);
    }
  }
  for (int i = 0; i < 30; ++i) {
    Shape s = random_shape(r, size_t(r(1, 4)), 7);
    if (i == 0) s = Shape{2, 1000};
    if (i == 1) s = Shape{3, 300, 5};  // a strided axis wider than one column block
    if (i == 2) s = Shape{2, 4, 700};
    Attributes a;
    const int64_t rank = int64_t(s.rank());
    if (i == 1)
      a.set("axis", int64_t{1});
    else if (i == 2)
      a.set("axis", int64_t{-2});
    else if (r.chance(0.8))
      a.set("axis", r(-rank, rank - 1));
    InputSpec x = in(s);
    x.lo = -10.f, x.hi = 10.f;
    check_op({"Softmax", a, {x}, int(r(1, 3))}, "cpu-softmax", rng);
  }
  // At every ISA level (the rows' own vector code and exp): rows of every tail of the 8- and
  // 16-wide loops and attention's 197, with scores far apart (some exps underflow); a row with
  // masked (-inf) scores gives them exactly 0.
  test::for_each_isa([&](cpu::Isa) {
    for (int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 23, 31, 33, 197}) {
      InputSpec x = in({3, n});
      x.lo = -60.f, x.hi = 60.f;
      check_op({"Softmax", {}, {x}, 2}, "cpu-softmax", rng);
    }
    Tensor masked = test::random_tensor({2, 13}, rng);
    for (int64_t i : {0, 5, 12, 13 + 3, 13 + 11}) masked.data<float>()[i] = -INFINITY;
    check_op({"Softmax", {}, {fixed(masked, false)}, 1}, "cpu-softmax", rng);
    Graph g;
    Node* n = g.add_node("Softmax", "s", {g.add_input("x", DType::f32, masked.shape())}, 1);
    g.add_output(n->outputs[0]);
    Session session(std::move(g));
    const Tensor y = session.run({{"x", masked}}).begin()->second;
    for (int64_t i : {0, 5, 12, 13 + 3, 13 + 11}) CHECK(y.data<float>()[i] == 0.f);
    // Against float64, element by element: x - max rounded to float (up to 3.8e-6 absolute
    // for differences up to 60, so as much relative in the exp), the exp's own error (2e-7)
    // and the sum's.
    const Tensor x = test::random_tensor({4, 197}, rng, -30.f, 30.f);
    Graph g2;
    Node* s2 = g2.add_node("Softmax", "s", {g2.add_input("x", DType::f32, x.shape())}, 1);
    g2.add_output(s2->outputs[0]);
    Session exact(std::move(g2));
    const Tensor p = exact.run({{"x", x}}).begin()->second;
    double worst = 0;
    for (int64_t row = 0; row < 4; ++row) {
      const float* xr = x.data<float>() + row * 197;
      double mx = -INFINITY, sum = 0;
      for (int64_t i = 0; i < 197; ++i) mx = std::max(mx, double(xr[i]));
      for (int64_t i = 0; i < 197; ++i) sum += std::exp(double(xr[i]) - mx);
      for (int64_t i = 0; i < 197; ++i) {
        const double want = std::exp(double(xr[i]) - mx) / sum;
        if (want > 1e-30)
          worst = std::max(worst, std::abs(p.data<float>()[row * 197 + i] - want) / want);
      }
    }
    INFO("worst relative error " << worst);
    CHECK(worst < 5e-6);
  });
}

TEST_CASE("cpu LayerNormalization matches the reference: axes, tails, rows far from 0",
          "[cpu]") {
  std::mt19937 rng(57);
  struct Spec {
    Shape x;
    int64_t axis;
    float offset;  // added to every input: the variance must not cancel
    bool bias;
  };
  const Spec specs[] = {{{1, 197, 768}, -1, 0.f, true},  {{2, 3, 13}, -1, 0.f, false},
                        {{4, 5, 6}, 1, 0.f, true},       {{3, 7}, 0, 0.f, true},
                        {{2, 9, 100}, -1, 1000.f, true}, {{5, 3}, -1, -300.f, false}};
  for (int threads : {1, 2, 3})
    for (const Spec& s : specs) {
      const int64_t axis = s.axis < 0 ? s.axis + int64_t(s.x.rank()) : s.axis;
      std::vector<int64_t> norm(s.x.dims().begin() + axis, s.x.dims().end());
      InputSpec x = in(s.x);
      x.lo = s.offset - 1.f, x.hi = s.offset + 1.f;
      Attributes a;
      a.set("axis", s.axis);
      OpCase c{"LayerNormalization", a, {x, in(Shape(norm), true)}, threads};
      if (s.bias) c.inputs.push_back(in(Shape(norm), true));
      check_op(c, "cpu-layernorm", rng);
    }
}

TEST_CASE("cpu Transpose and Concat match the reference", "[cpu]") {
  std::mt19937 rng(51);
  Rand r{rng};
  for (int i = 0; i < 50; ++i) {
    const size_t rank = size_t(r(1, 5));
    Shape s = random_shape(r, rank, 6);
    std::vector<int64_t> perm(rank);
    for (size_t k = 0; k < rank; ++k) perm[k] = int64_t(k);
    std::shuffle(perm.begin(), perm.end(), rng);
    Attributes a;
    if (r.chance(0.85)) a.set("perm", perm);
    check_op({"Transpose", a, {in(s)}, int(r(1, 3))}, "cpu-transpose", rng,
             i % 5 == 0 ? DType::i64 : DType::f32);
  }
  Attributes nchw_to_nhwc;
  nchw_to_nhwc.set("perm", std::vector<int64_t>{0, 2, 3, 1});
  Attributes swap;
  swap.set("perm", std::vector<int64_t>{1, 0});
  Attributes nhwc_to_nchw;
  nhwc_to_nchw.set("perm", std::vector<int64_t>{0, 3, 1, 2});
  for (int threads : {1, 2}) {
    // Bytes and 4-byte values: whole 16x16 and 8x8 blocks in registers, edges of every size.
    for (DType t : {DType::f32, DType::i8}) {
      check_op({"Transpose", nchw_to_nhwc, {in({2, 67, 30, 31})}, threads}, "cpu-transpose", rng,
               t);
      check_op({"Transpose", nhwc_to_nchw, {in({1, 17, 19, 40})}, threads}, "cpu-transpose", rng,
               t);
      check_op({"Transpose", swap, {in({300, 250})}, threads}, "cpu-transpose", rng, t);
    }
    // Bytes of three planes to channels-last (an int8 RGB input: the shuffling path), past
    // one 4096-pixel unit and with a pixel count that is no multiple of 16; four planes.
    for (const Shape& s : {Shape{2, 3, 5, 7}, Shape{1, 3, 71, 67}, Shape{1, 4, 9, 9}})
      check_op({"Transpose", nchw_to_nhwc, {in(s)}, threads}, "cpu-transpose", rng, DType::i8);
  }

  for (int i = 0; i < 30; ++i) {
    const size_t rank = size_t(r(1, 4));
    Shape base = random_shape(r, rank, 5);
    const int64_t axis = r(0, int64_t(rank) - 1);
    OpCase c;
    c.op = "Concat";
    c.attrs.set("axis", r.chance(0.3) ? axis - int64_t(rank) : axis);
    for (int64_t k = r(1, 4); k-- > 0;) {
      Shape s = base;
      s[axis] = r(1, 4);
      c.inputs.push_back(in(s, r.chance(0.2)));
    }
    c.threads = int(r(1, 3));
    check_op(c, "cpu-concat", rng);
  }
  Attributes axis1;
  axis1.set("axis", int64_t{1});
  check_op({"Concat", axis1, {in({2, 64, 28, 28}), in({2, 32, 28, 28})}, 2}, "cpu-concat", rng);
}

TEST_CASE("cpu reshape-like ops copy the input", "[cpu]") {
  std::mt19937 rng(61);
  Attributes axis2;
  axis2.set("axis", int64_t{2});
  check_op({"Flatten", axis2, {in({2, 3, 4, 5})}, 1}, "cpu-copy", rng);
  check_op({"Identity", {}, {in({7, 3})}, 1}, "cpu-copy", rng);
  check_op({"Reshape", {}, {in({2, 3, 4}), fixed(Tensor::from_vector<int64_t>({4, -1}, {2}))}, 1},
           "cpu-copy", rng);
  check_op({"Unsqueeze", {}, {in({2, 3}), fixed(Tensor::from_vector<int64_t>({0, 3}, {2}))}, 1},
           "cpu-copy", rng);
}


TEST_CASE("cpu Resize matches the reference: modes, coordinate modes, scales and sizes", "[cpu]") {
  std::mt19937 rng(83);
  Rand r{rng};
  const char* modes[] = {"nearest", "linear", "cubic"};
  const char* coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                          "half_pixel_symmetric", "tf_half_pixel_for_nn"};
  const char* nearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  for (int i = 0; i < 90; ++i) {
    const size_t rank = size_t(r(2, 4));
    const Shape s = random_shape(r, rank, 7);
    Attributes a;
    a.set("mode", std::string(modes[i % 3]));
    // tf_half_pixel_for_nn moves even a dim of scale 1, which the kernel leaves to the
    // reference unless it is one of the last two.
    a.set("coordinate_transformation_mode", std::string(coords[r(0, rank == 2 ? 5 : 4)]));
    a.set("nearest_mode", std::string(nearest[r(0, 3)]));
    if (r.chance(0.3)) a.set("exclude_outside", int64_t{1});
    // Up- and downsampling of the last two dims (upsampling by 16 as DeepLabv3's head does).
    std::vector<int64_t> sizes = s.dims();
    std::vector<float> scales(rank, 1.f);
    for (size_t d = rank - 2; d < rank; ++d) {
      sizes[d] = r.chance(0.2) ? s[d] * 16 : r(1, 13);
      scales[d] = r.pick<float>({0.5f, 0.75f, 1.f, 1.5f, 2.f, 3.f});
    }
    const auto none = fixed(Tensor(DType::f32, Shape{0}));
    OpCase c{"Resize", a, {in(s), none}, int(r(1, 2))};
    if (r.chance(0.5)) {
      c.inputs.push_back(fixed(Tensor::from_vector<float>(scales, {int64_t(rank)})));
    } else {
      c.inputs.push_back(absent());
      c.inputs.push_back(fixed(Tensor::from_vector<int64_t>(sizes, {int64_t(rank)})));
    }
    check_op(c, "cpu-resize", rng);
  }
}

TEST_CASE("cpu Slice matches the reference: axes, negative and clamped bounds, steps", "[cpu]") {
  std::mt19937 rng(71);
  Rand r{rng};
  auto ints = [](const std::vector<int64_t>& v) {
    return fixed(Tensor::from_vector<int64_t>(v, {int64_t(v.size())}));
  };
  for (int i = 0; i < 60; ++i) {
    const size_t rank = size_t(r(1, 4));
    Shape s = random_shape(r, rank, 7);
    std::vector<int64_t> starts, ends, axes, steps;
    for (size_t d = 0; d < rank; ++d) {
      if (!r.chance(0.7)) continue;
      const int64_t dim = s[d], step = r.pick<int64_t>({1, 1, 2, 3, -1, -2});
      axes.push_back(r.chance(0.3) ? int64_t(d) - int64_t(rank) : int64_t(d));
      starts.push_back(r(-dim - 2, dim + 2));  // negative and out of range: clamped
      ends.push_back(r.chance(0.2) ? (step > 0 ? INT64_MAX : INT64_MIN) : r(-dim - 2, dim + 2));
      steps.push_back(step);
    }
    if (axes.empty()) continue;
    OpCase c{"Slice", {}, {in(s), ints(starts), ints(ends), ints(axes), ints(steps)}, int(r(1, 3))};
    if (r.chance(0.3)) c.inputs.pop_back();  // steps default to 1
    bool unit = true;
    for (int64_t st : steps) unit = unit && st == 1;
    if (c.inputs.size() == 4 && !unit) continue;  // those steps were not meant to be dropped
    check_op(c, "cpu-slice", rng, i % 5 == 0 ? DType::i64 : DType::f32);
  }
  // ViT's split of the fused QKV projection, and the attribute form (opset < 10).
  for (int64_t part = 0; part < 3; ++part)
    check_op({"Slice", {}, {in({197, 1, 2304}), ints({768 * part}), ints({768 * (part + 1)}),
                            ints({-1}), ints({1})}, 2},
             "cpu-slice", rng);
  Attributes legacy;
  legacy.set("starts", std::vector<int64_t>{1, 0});
  legacy.set("ends", std::vector<int64_t>{3, 100});
  legacy.set("axes", std::vector<int64_t>{0, 2});
  check_op({"Slice", legacy, {in({4, 3, 5})}, 1}, "cpu-slice", rng);
}

TEST_CASE("cpu Gather matches the reference: axes, index shapes and signs, dtypes", "[cpu]") {
  std::mt19937 rng(72);
  Rand r{rng};
  for (int i = 0; i < 40; ++i) {
    const size_t rank = size_t(r(1, 4));
    const Shape s = random_shape(r, rank, 6);
    const int64_t axis = r(-int64_t(rank), int64_t(rank) - 1);
    const int64_t n = s[size_t(axis < 0 ? axis + int64_t(rank) : axis)];
    Shape is = random_shape(r, size_t(r(0, 2)), 4);  // a scalar index, or 1-2 dims of them
    std::vector<int64_t> idx(size_t(is.numel()));
    for (int64_t& v : idx) v = r(-n, n - 1);
    Tensor t = i % 2 ? Tensor::from_vector<int64_t>(idx, is)
                     : Tensor::from_vector<int32_t>({idx.begin(), idx.end()}, is);
    Attributes a;
    a.set("axis", axis);
    check_op({"Gather", a, {in(s), fixed(t, i % 3 != 0)}, int(r(1, 3))}, "cpu-gather", rng,
             i % 4 == 0 ? DType::i8 : DType::f32);
  }
  // ViT's q, k and v from the attention's [3, 197, 1, 768] projection.
  for (int64_t part = 0; part < 3; ++part)
    check_op({"Gather", {}, {in({3, 197, 1, 768}), fixed(Tensor::scalar<int64_t>(part))}, 2},
             "cpu-gather", rng);
  // An index out of range (a run-time input) is an error naming it and the axis, not a read
  // past the data.
  Graph g;
  Node* n = g.add_node("Gather", "take",
                       {g.add_input("x", DType::f32, Shape{4, 3}),
                        g.add_input("i", DType::i64, Shape{2})},
                       1);
  g.add_output(n->outputs[0]);
  Session session(std::move(g));
  const NamedTensors bad{{"x", test::random_tensor({4, 3}, rng)},
                         {"i", Tensor::from_vector<int64_t>({1, 4}, {2})}};
  CHECK_THROWS_WITH(session.run(bad), Catch::Contains("take") && Catch::Contains("index 4") &&
                                          Catch::Contains("axis 0 of size 4"));
}

TEST_CASE("cpu Where matches the reference: broadcasts of all three operands, dtypes", "[cpu]") {
  std::mt19937 rng(73);
  Rand r{rng};
  auto condition = [&](const Shape& s) {
    Tensor t(DType::boolean, s);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<bool>()[i] = r.chance(0.5);
    return fixed(t, r.chance(0.5));
  };
  for (int i = 0; i < 40; ++i) {
    const Shape out = random_shape(r, size_t(r(1, 4)), 6);
    const Shape c = broadcast_operand(r, out), x = broadcast_operand(r, out);
    const Shape y = broadcast_operand(r, out);
    check_op({"Where", {}, {condition(c), in(x), in(y)}, int(r(1, 3))}, "cpu-where", rng,
             i % 3 == 0 ? DType::i64 : DType::f32);
  }
  // Swin's attention mask: [64, 49, 49] against scalars.
  check_op({"Where", {}, {condition({64, 49, 49}), in({}), in({})}, 2}, "cpu-where", rng);
}

TEST_CASE("cpu Pad matches the reference: every mode, crops, axes, dtypes, the attribute form",
          "[cpu]") {
  std::mt19937 rng(73);
  Rand r{rng};
  auto ints = [](const std::vector<int64_t>& v) {
    return fixed(Tensor::from_vector<int64_t>(v, {int64_t(v.size())}));
  };
  const char* modes[] = {"constant", "reflect", "edge", "wrap"};
  for (int i = 0; i < 80; ++i) {
    const size_t rank = size_t(r(1, 4));
    const Shape s = random_shape(r, rank, 6);
    const std::string mode = modes[i % 4];
    // Pads of -2..3 per dim (negative: a crop), none that empties a dim; on some axes only.
    std::vector<int64_t> axes, begins, ends;
    for (size_t d = 0; d < rank; ++d) {
      if (r.chance(0.25)) continue;
      int64_t b = r(-2, 3), e = r(-2, 3);
      while (s[d] + b + e < 1) ++e;
      axes.push_back(r.chance(0.3) ? int64_t(d) - int64_t(rank) : int64_t(d));
      begins.push_back(b);
      ends.push_back(e);
    }
    const bool all_axes = axes.size() == rank && r.chance(0.5);  // (in order: no axes input)
    std::vector<int64_t> pads = begins;
    pads.insert(pads.end(), ends.begin(), ends.end());
    if (axes.empty()) continue;
    const DType dtype = i % 5 == 0 ? DType::i64 : i % 5 == 1 ? DType::i8 : DType::f32;
    Attributes a;
    a.set("mode", mode);
    OpCase c{"Pad", a, {in(s), ints(pads)}, int(r(1, 3))};
    if (mode == "constant" && dtype == DType::f32) {
      c.inputs.push_back(fixed(Tensor::from_vector<float>({r.chance(0.5) ? 0.f : -2.5f}, {})));
    } else if (!all_axes) {
      c.inputs.push_back(absent());
    }
    if (!all_axes) c.inputs.push_back(ints(axes));
    check_op(c, "cpu-pad", rng, dtype);
  }
  // Inception v3's padded 3x3 average pools, and the attribute form (opset < 11) with a value.
  check_op({"Pad", {}, {in({1, 192, 6, 6}), ints({0, 0, 1, 1, 0, 0, 1, 1})}, 2}, "cpu-pad", rng);
  Attributes legacy;
  legacy.set("pads", std::vector<int64_t>{0, 1, 2, 0, 2, 1});
  legacy.set("value", 1.5f);
  check_op({"Pad", legacy, {in({2, 3, 4})}, 1}, "cpu-pad", rng);
  legacy.set("mode", std::string("reflect"));
  check_op({"Pad", legacy, {in({2, 3, 4})}, 1}, "cpu-pad", rng);
}

}  // namespace
}  // namespace minfer
