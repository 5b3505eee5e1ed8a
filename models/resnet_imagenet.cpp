// ImageNet ResNets in torchvision's layout (ResNet v1.5: a Bottleneck strides in its 3x3).
#include <array>

#include "models/resnet_builder.h"

namespace minfer {

namespace {

struct Spec {
  bool bottleneck;
  std::array<int, 4> blocks;
};

Spec spec_for(const std::string& name, int depth) {
  switch (depth) {
    case 18:
      return {false, {2, 2, 2, 2}};
    case 34:
      return {false, {3, 4, 6, 3}};
    case 50:
      return {true, {3, 4, 6, 3}};
    case 101:
      return {true, {3, 4, 23, 3}};
    case 152:
      return {true, {3, 8, 36, 3}};
    default:
      throw Error(ErrorCode::InvalidArgument,
                  "model '" + name + "': no ImageNet ResNet of depth " + std::to_string(depth));
  }
}

// conv3x3(stride)-bn-relu-conv3x3-bn, + shortcut, relu.
Value* basic_block(ResNetBuilder& r, const std::string& p, Value* x, int64_t cin, int64_t planes,
                   int64_t stride) {
  Value* y = r.conv(p + "conv1", x, cin, planes, 3, stride, 1);
  y = r.relu(p + "relu1", r.bn(p + "bn1", y, planes));
  y = r.conv(p + "conv2", y, planes, planes, 3, 1, 1);
  y = r.bn(p + "bn2", y, planes, /*residual_last=*/true);
  Value* shortcut = x;
  if (stride != 1 || cin != planes) {
    shortcut = r.conv(p + "downsample.0", x, cin, planes, 1, stride, 0);
    shortcut = r.bn(p + "downsample.1", shortcut, planes);
  }
  return r.relu(p + "relu", r.add(p + "add", y, shortcut));
}

// conv1x1-bn-relu-conv3x3(stride)-bn-relu-conv1x1(x4)-bn, + shortcut, relu.
Value* bottleneck_block(ResNetBuilder& r, const std::string& p, Value* x, int64_t cin,
                        int64_t planes, int64_t stride) {
  const int64_t cout = planes * 4;
  Value* y = r.conv(p + "conv1", x, cin, planes, 1, 1, 0);
  y = r.relu(p + "relu1", r.bn(p + "bn1", y, planes));
  y = r.conv(p + "conv2", y, planes, planes, 3, stride, 1);
  y = r.relu(p + "relu2", r.bn(p + "bn2", y, planes));
  y = r.conv(p + "conv3", y, planes, cout, 1, 1, 0);
  y = r.bn(p + "bn3", y, cout, /*residual_last=*/true);
  Value* shortcut = x;
  if (stride != 1 || cin != cout) {
    shortcut = r.conv(p + "downsample.0", x, cin, cout, 1, stride, 0);
    shortcut = r.bn(p + "downsample.1", shortcut, cout);
  }
  return r.relu(p + "relu", r.add(p + "add", y, shortcut));
}

}  // namespace

Graph build_imagenet_resnet(const std::string& name, int depth, WeightSource& weights) {
  const Spec spec = spec_for(name, depth);
  Graph g;
  g.name = name;
  ResNetBuilder r(g, weights);
  Value* x = r.input(224);
  x = r.conv("conv1", x, 3, 64, 7, 2, 3);
  x = r.relu("relu", r.bn("bn1", x, 64));
  x = r.max_pool("maxpool", x, 3, 2, 1);
  int64_t channels = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t planes = int64_t{64} << stage;
    for (int i = 0; i < spec.blocks[stage]; ++i) {
      const std::string prefix =
          "layer" + std::to_string(stage + 1) + "." + std::to_string(i) + ".";
      const int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      if (spec.bottleneck) {
        x = bottleneck_block(r, prefix, x, channels, planes, stride);
        channels = planes * 4;
      } else {
        x = basic_block(r, prefix, x, channels, planes, stride);
        channels = planes;
      }
    }
  }
  r.head(x, channels, 1000, "fc");
  return g;
}

}  // namespace minfer
