// Image loading (stb_image: PNG/JPEG/BMP) and preprocessing into NCHW float tensors.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "minfer/tensor.h"

namespace minfer {

struct ImagePreprocess {
  int height = 224, width = 224;  // the network's input size
  // ImageNet style: resize the shorter side to `resize_shorter` (bilinear), then centre-crop
  // height x width. When 0, resize straight to height x width.
  int resize_shorter = 0;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f};  // applied after scaling pixels to [0,1]
  std::array<float, 3> std{0.229f, 0.224f, 0.225f};
};

// Loads an image as RGB (alpha dropped, grey expanded) and returns [1,3,H,W] float.
Tensor load_image(const std::string& path, const ImagePreprocess& pre);
// Stacks several [1,3,H,W] tensors into [N,3,H,W].
Tensor stack_batch(const std::vector<Tensor>& images);

}  // namespace minfer
