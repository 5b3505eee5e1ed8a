#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#include <stb/stb_image_write.h>

#include "io_test_util.h"
#include "repo_data.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// Value of pixel (y, x) channel c of a [1,3,H,W] tensor.
float px(const Tensor& t, int c, int y, int x) {
  return t.data<float>()[(c * t.dim(2) + y) * t.dim(3) + x];
}

ImagePreprocess raw(int h, int w) {  // pixels / 255, no normalization
  ImagePreprocess p;
  p.height = h;
  p.width = w;
  p.mean = {0, 0, 0};
  p.std = {1, 1, 1};
  return p;
}

}  // namespace

TEST_CASE("image: CIFAR-10 PNG to a normalized NCHW tensor", "[io]") {
  auto path = repo_data_dir() / "images" / "cifar10-png" / "cifar10_00_3.png";
  ImagePreprocess pre;
  pre.height = pre.width = 32;
  Tensor t = load_image(path.string(), pre);
  REQUIRE(t.shape() == Shape{1, 3, 32, 32});
  // Expected values: PIL Image.open(path).convert("RGB"), then numpy (a / 255 - mean) / std
  // in float64 (computed once with Pillow 13 / numpy 2.4; not needed to run this test).
  struct {
    int y, x;
    float rgb[3];
  } expected[] = {{0, 0, {0.587807f, -0.074930f, -0.950414f}},
                  {5, 17, {-0.987670f, -1.055322f, -1.020131f}},
                  {31, 31, {-1.758284f, -0.862745f, 0.112767f}},
                  {16, 8, {0.245312f, 0.082633f, -0.375251f}}};
  for (const auto& e : expected)
    for (int c = 0; c < 3; ++c) {
      INFO("y=" << e.y << " x=" << e.x << " c=" << c);
      CHECK(px(t, c, e.y, e.x) == Approx(e.rgb[c]).margin(1e-5));
    }
}

TEST_CASE("image: RGBA PNG drops alpha; ImageNet resize + centre crop", "[io]") {
  auto path = data_dir() / "images" / "imagenet" / "cat_285.png";  // 224x224 RGBA
  ImagePreprocess pre;  // 224x224, ImageNet mean/std, no resize
  Tensor t = load_image(path.string(), pre);
  REQUIRE(t.shape() == Shape{1, 3, 224, 224});
  // Same oracle as above (PIL convert("RGB") drops alpha like we do).
  CHECK(px(t, 0, 112, 112) == Approx(0.382310f).margin(1e-5));
  CHECK(px(t, 1, 112, 112) == Approx(-0.250000f).margin(1e-5));
  CHECK(px(t, 2, 112, 112) == Approx(-0.636688f).margin(1e-5));
  CHECK(px(t, 0, 150, 60) == Approx(1.341296f).margin(1e-5));
  CHECK(px(t, 2, 150, 60) == Approx(0.775076f).margin(1e-5));

  // A JPEG photo: shorter side to 256, centre crop 224.
  pre.resize_shorter = 256;
  auto jpg = data_dir() / "images" / "imagenet";
  std::string first;
  for (const auto& e : std::filesystem::directory_iterator(jpg))
    if (e.path().extension() == ".jpg" && (first.empty() || e.path().string() < first))
      first = e.path().string();
  REQUIRE(!first.empty());
  Tensor p = load_image(first, pre);
  REQUIRE(p.shape() == Shape{1, 3, 224, 224});
  for (int64_t i = 0; i < p.numel(); ++i) {
    float v = p.data<float>()[i];
    REQUIRE((v >= -2.2f && v <= 2.7f));  // (0 - mean) / std .. (1 - mean) / std
  }
}

TEST_CASE("image: grey, alpha, bilinear resize and crop on synthetic images", "[io]") {
  auto dir = temp_dir("image_synthetic");
  {  // Grey 2x2 -> three equal channels.
    unsigned char grey[4] = {0, 51, 102, 255};
    auto f = (dir / "grey.png").string();
    REQUIRE(stbi_write_png(f.c_str(), 2, 2, 1, grey, 2));
    Tensor t = load_image(f, raw(2, 2));
    for (int c = 0; c < 3; ++c) {
      CHECK(px(t, c, 0, 1) == Approx(0.2f));
      CHECK(px(t, c, 1, 0) == Approx(0.4f));
      CHECK(px(t, c, 1, 1) == Approx(1.0f));
    }
  }
  {  // RGBA with alpha 0: the colour is kept, not blended with a background.
    unsigned char rgba[4] = {10, 20, 30, 0};
    auto f = (dir / "alpha.png").string();
    REQUIRE(stbi_write_png(f.c_str(), 1, 1, 4, rgba, 4));
    Tensor t = load_image(f, raw(1, 1));
    CHECK(px(t, 0, 0, 0) == Approx(10 / 255.f));
    CHECK(px(t, 2, 0, 0) == Approx(30 / 255.f));
  }
  {  // BMP 2x2 upsampled to 4x4. Half-pixel centres: source x = (i + 0.5) / 2 - 0.5, clamped,
     // = 0, 0.25, 0.75, 1 for i = 0..3. Red is 0 | 255 by column, green 0 / 255 by row.
    unsigned char rgb[12] = {0, 0, 9, 255, 0, 9, 0, 255, 9, 255, 255, 9};
    auto f = (dir / "up.bmp").string();
    REQUIRE(stbi_write_bmp(f.c_str(), 2, 2, 3, rgb));
    Tensor t = load_image(f, raw(4, 4));
    const float w[4] = {0, 0.25f, 0.75f, 1};
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 4; ++x) {
        CHECK(px(t, 0, y, x) == Approx(w[x]));
        CHECK(px(t, 1, y, x) == Approx(w[y]));
        CHECK(px(t, 2, y, x) == Approx(9 / 255.f));
      }
    // Downsampling 2x2 -> 1x1 samples the centre: the mean of the four pixels.
    Tensor d = load_image(f, raw(1, 1));
    CHECK(px(d, 0, 0, 0) == Approx(0.5f));
  }
  {  // 8 wide x 4 high, red = 10 * column. resize_shorter 4 keeps the size; the 4x4 centre
     // crop starts at column 2.
    std::vector<unsigned char> img(8 * 4 * 3);
    for (int y = 0; y < 4; ++y)
      for (int x = 0; x < 8; ++x) img[(y * 8 + x) * 3] = static_cast<unsigned char>(10 * x);
    auto f = (dir / "wide.png").string();
    REQUIRE(stbi_write_png(f.c_str(), 8, 4, 3, img.data(), 8 * 3));
    ImagePreprocess pre = raw(4, 4);
    pre.resize_shorter = 4;
    Tensor t = load_image(f, pre);
    for (int x = 0; x < 4; ++x) CHECK(px(t, 0, 1, x) * 255 == Approx(10 * (x + 2)));
    // Shorter side 2 (-> 4x2), crop 2x2 at column 1: source x = (j + 0.5) * 2 - 0.5 for
    // resized column j = 1, 2 -> 2.5, 4.5 -> red 25, 45.
    pre = raw(2, 2);
    pre.resize_shorter = 2;
    Tensor s = load_image(f, pre);
    CHECK(px(s, 0, 0, 0) * 255 == Approx(25));
    CHECK(px(s, 0, 0, 1) * 255 == Approx(45));
    pre = raw(3, 3);
    pre.resize_shorter = 2;
    require_error([&] { load_image(f, pre); }, ErrorCode::InvalidArgument, {f, "cannot crop 3x3"});
  }
}

TEST_CASE("image: missing and corrupt files, bad options", "[io]") {
  auto dir = temp_dir("image_errors");
  ImagePreprocess pre = raw(32, 32);
  require_error([&] { load_image((dir / "none.png").string(), pre); }, ErrorCode::InvalidArgument,
                {"none.png", "cannot open"});
  auto garbage = (dir / "garbage.png").string();
  write_bytes(garbage, "this is not an image at all");
  require_error([&] { load_image(garbage, pre); }, ErrorCode::InvalidArgument,
                {garbage, "cannot decode image", "known type"});
  auto truncated = (dir / "truncated.png").string();
  std::string png = read_bytes(repo_data_dir() / "images" / "cifar10-png" / "cifar10_00_3.png");
  write_bytes(truncated, png.substr(0, png.size() / 2));
  require_error([&] { load_image(truncated, pre); }, ErrorCode::InvalidArgument,
                {truncated, "cannot decode image", "Corrupt PNG"});
  auto ok = (repo_data_dir() / "images" / "cifar10-png" / "cifar10_00_3.png").string();
  pre.std = {1, 0, 1};
  require_error([&] { load_image(ok, pre); }, ErrorCode::InvalidArgument, {"std"});
  pre = raw(0, 32);
  require_error([&] { load_image(ok, pre); }, ErrorCode::InvalidArgument, {"bad size"});
}

TEST_CASE("image: stack_batch", "[io]") {
  auto dir = repo_data_dir() / "images" / "cifar10-png";
  ImagePreprocess pre;
  pre.height = pre.width = 32;
  Tensor a = load_image((dir / "cifar10_00_3.png").string(), pre);
  Tensor b = load_image((dir / "cifar10_01_8.png").string(), pre);
  Tensor batch = stack_batch({a, b});
  REQUIRE(batch.shape() == Shape{2, 3, 32, 32});
  CHECK(std::memcmp(batch.raw(), a.raw(), a.nbytes()) == 0);
  CHECK(std::memcmp(static_cast<const char*>(batch.raw()) + a.nbytes(), b.raw(), b.nbytes()) == 0);
  require_error([&] { stack_batch({}); }, ErrorCode::InvalidArgument, {"no images"});
  require_error(
      [&] {
        stack_batch({a, Tensor(DType::f32, Shape{1, 3, 16, 16})});
      },
      ErrorCode::InvalidArgument, {"image 1", "[1,3,16,16]"});
}
