// Embedding minfer: classify an image with a CIFAR-10 ResNet-20.
// Usage: embed [weights.safetensors] [image.png]   (seeded weights and a grey image by default)
#include <cstdio>

#include <minfer/minfer.h>

int main(int argc, char** argv) try {
  const std::string weights = argc > 1 ? argv[1] : "";
  minfer::Session session(minfer::build_model("cifar-resnet20", weights));
  const auto& info = minfer::builtin_model_info("cifar-resnet20");
  minfer::Tensor image = argc > 2 ? minfer::load_image(argv[2], info.preprocess)
                                  : minfer::Tensor(minfer::DType::f32, minfer::Shape{1, 3, 32, 32});
  minfer::Tensor logits = session.run_one(image);  // [1, 10]
  const float* p = logits.data<float>();
  int best = 0;
  for (int i = 1; i < 10; ++i) best = p[i] > p[best] ? i : best;
  std::printf("class %d (%s), logit %.4f\n", best, minfer::cifar10_class_names()[best].c_str(),
              p[best]);
  return 0;
} catch (const minfer::Error& e) {
  std::fprintf(stderr, "error: %s\n", e.what());
  return 1;
}
