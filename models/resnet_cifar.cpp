// CIFAR-10 ResNets (He et al. 2015, section 4.2) as in akamaster/pytorch_resnet_cifar10:
// 6n+2 layers, 16/32/64 channels, option-A (parameter-free) shortcuts.
#include "models/resnet_builder.h"

namespace minfer {

namespace {

// Option A: where a block halves the resolution and doubles the channels, the shortcut takes
// every second row and column (starting at 0) and pads planes/4 zero channels on each side.
Value* option_a_shortcut(ResNetBuilder& r, const std::string& p, Value* x, int64_t size,
                         int64_t planes) {
  const int64_t pad = planes / 4;
  Value* sliced =
      r.op("Slice", p + "shortcut.slice",
           {x, r.ints(p + "shortcut.starts", {0, 0}), r.ints(p + "shortcut.ends", {size, size}),
            r.ints(p + "shortcut.axes", {2, 3}), r.ints(p + "shortcut.steps", {2, 2})});
  Attributes a;
  a.set("mode", std::string("constant"));
  // ONNX pads: begins of all axes, then ends: channel axis gets `pad` on both sides.
  return r.op("Pad", p + "shortcut.pad",
              {sliced, r.ints(p + "shortcut.pads", {0, pad, 0, 0, 0, pad, 0, 0})}, std::move(a));
}

}  // namespace

Graph build_cifar_resnet(const std::string& name, int depth, WeightSource& weights) {
  check(depth >= 8 && (depth - 2) % 6 == 0, ErrorCode::InvalidArgument,
        "model '" + name + "': a CIFAR ResNet has 6n+2 layers, not " + std::to_string(depth));
  const int n = (depth - 2) / 6;
  Graph g;
  g.name = name;
  ResNetBuilder r(g, weights);
  Value* x = r.input(32);
  x = r.conv("conv1", x, 3, 16, 3, 1, 1);
  x = r.relu("relu", r.bn("bn1", x, 16));
  int64_t channels = 16, size = 32;
  for (int stage = 0; stage < 3; ++stage) {
    const int64_t planes = int64_t{16} << stage;
    for (int i = 0; i < n; ++i) {
      const std::string p = "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      Value* y = r.conv(p + "conv1", x, channels, planes, 3, stride, 1);
      y = r.relu(p + "relu1", r.bn(p + "bn1", y, planes));
      y = r.conv(p + "conv2", y, planes, planes, 3, 1, 1);
      y = r.bn(p + "bn2", y, planes, /*residual_last=*/true);
      Value* shortcut = x;
      if (stride != 1 || channels != planes) {
        shortcut = option_a_shortcut(r, p, x, size, planes);
        size /= stride;
      }
      x = r.relu(p + "relu", r.add(p + "add", y, shortcut));
      channels = planes;
    }
  }
  r.head(x, channels, 10, "linear");
  return g;
}

}  // namespace minfer
