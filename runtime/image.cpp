// Image decoding with stb_image (the one translation unit that holds its implementation) and
// preprocessing into normalized NCHW float tensors.
#include "minfer/image.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "runtime/file_util.h"

#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_STATIC  // keep stb's symbols private to this file
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_FAILURE_USERMSG
#include <stb_image.h>

namespace minfer {

namespace {

// Source sample positions for one axis of a bilinear resize from `in` to `out` pixels, of
// which `count` are produced starting at output pixel `first` (for a centre crop).
struct AxisTaps {
  std::vector<int> lo, hi;
  std::vector<float> frac;  // weight of `hi`
};

// Half-pixel centres (src = (dst + 0.5) * in / out - 0.5, clamped to the edge), no
// antialiasing: the same as PyTorch's interpolate(mode="bilinear", align_corners=False) and
// OpenCV's INTER_LINEAR, not PIL's resize (which low-pass filters when shrinking).
AxisTaps axis_taps(int in, int out, int first, int count) {
  AxisTaps t;
  double scale = static_cast<double>(in) / out;
  for (int i = first; i < first + count; ++i) {
    double src = std::clamp((i + 0.5) * scale - 0.5, 0.0, static_cast<double>(in - 1));
    int lo = static_cast<int>(std::floor(src));
    t.lo.push_back(lo);
    t.hi.push_back(std::min(lo + 1, in - 1));
    t.frac.push_back(static_cast<float>(src - lo));
  }
  return t;
}

}  // namespace

Tensor load_image(const std::string& path, const ImagePreprocess& pre) {
  check(pre.height > 0 && pre.width > 0 && pre.resize_shorter >= 0, ErrorCode::InvalidArgument,
        "load_image '" + path + "': bad size " + std::to_string(pre.height) + "x" +
            std::to_string(pre.width) + " (resize_shorter " + std::to_string(pre.resize_shorter) +
            ")");
  for (float s : pre.std)
    check(s != 0 && std::isfinite(s), ErrorCode::InvalidArgument,
          "load_image '" + path + "': std must be finite and non-zero");

  std::string bytes = detail::read_file(path, "image");
  int w = 0, h = 0, channels = 0;
  // Ask for 3 channels: stb expands grey to RGB and drops alpha (no compositing).
  std::unique_ptr<stbi_uc, void (*)(void*)> pixels(
      stbi_load_from_memory(reinterpret_cast<const stbi_uc*>(bytes.data()),
                            static_cast<int>(bytes.size()), &w, &h, &channels, 3),
      stbi_image_free);
  if (!pixels)
    throw Error(ErrorCode::InvalidArgument,
                "cannot decode image '" + path + "': " + stbi_failure_reason());

  // The size the whole image is resized to, and the crop window inside it.
  int rh = pre.height, rw = pre.width, top = 0, left = 0;
  if (pre.resize_shorter > 0) {  // torchvision Resize(int) + CenterCrop
    int64_t s = pre.resize_shorter;
    rh = static_cast<int>(w <= h ? s * h / w : s);
    rw = static_cast<int>(w <= h ? s : s * w / h);
    check(rh >= pre.height && rw >= pre.width, ErrorCode::InvalidArgument,
          "load_image '" + path + "': cannot crop " + std::to_string(pre.height) + "x" +
              std::to_string(pre.width) + " from the image resized to " + std::to_string(rh) + "x" +
              std::to_string(rw));
    top = static_cast<int>(std::nearbyint((rh - pre.height) / 2.0));  // round half to even
    left = static_cast<int>(std::nearbyint((rw - pre.width) / 2.0));
  }
  AxisTaps ys = axis_taps(h, rh, top, pre.height);
  AxisTaps xs = axis_taps(w, rw, left, pre.width);

  Tensor out(DType::f32, Shape{1, 3, pre.height, pre.width});
  float* dst = out.data<float>();
  const stbi_uc* src = pixels.get();
  const size_t plane = static_cast<size_t>(pre.height) * pre.width;
  for (int c = 0; c < 3; ++c) {
    // Fold the [0,1] scaling and the normalization into one multiply-add.
    const float mul = 1.f / (255.f * pre.std[c]), add = -pre.mean[c] / pre.std[c];
    float* o = dst + c * plane;
    for (int y = 0; y < pre.height; ++y) {
      const stbi_uc* r0 = src + static_cast<size_t>(ys.lo[y]) * w * 3 + c;
      const stbi_uc* r1 = src + static_cast<size_t>(ys.hi[y]) * w * 3 + c;
      const float fy = ys.frac[y];
      for (int x = 0; x < pre.width; ++x) {
        const int x0 = xs.lo[x] * 3, x1 = xs.hi[x] * 3;
        const float fx = xs.frac[x];
        float top_row = r0[x0] + fx * (r0[x1] - r0[x0]);
        float bottom_row = r1[x0] + fx * (r1[x1] - r1[x0]);
        o[static_cast<size_t>(y) * pre.width + x] =
            (top_row + fy * (bottom_row - top_row)) * mul + add;
      }
    }
  }
  return out;
}

Tensor stack_batch(const std::vector<Tensor>& images) {
  check(!images.empty(), ErrorCode::InvalidArgument, "stack_batch: no images");
  const Shape& first = images[0].shape();
  for (size_t i = 0; i < images.size(); ++i) {
    const Tensor& t = images[i];
    check(t.defined() && t.device().is_cpu() && t.dtype() == DType::f32 && t.rank() == 4 &&
              t.dim(0) == 1 && t.shape() == first,
          ErrorCode::InvalidArgument,
          "stack_batch: image " + std::to_string(i) + " is " +
              (t.defined() ? std::string(dtype_name(t.dtype())) + t.shape().to_string()
                           : std::string("undefined")) +
              ", expected f32" + first.to_string() + " with batch 1");
  }
  Shape shape = first;
  shape[0] = static_cast<int64_t>(images.size());
  Tensor out(DType::f32, shape);
  char* dst = static_cast<char*>(out.raw());
  for (const Tensor& t : images) {
    std::memcpy(dst, t.raw(), t.nbytes());
    dst += t.nbytes();
  }
  return out;
}

}  // namespace minfer
