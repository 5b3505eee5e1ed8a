// Whole ResNets on CUDA: every node runs on the GPU, fp32 logits match the CPU within 1e-3
// (relative to the largest logit), and int8 outputs equal the CPU int8 kernels bit for bit.
#include "cuda/cuda_test_util.h"
#include "minfer/calibrate.h"
#include "repo_data.h"

namespace minfer::test {
namespace {

// One image of each CIFAR-10 class (the first of each in cifar10-jpeg), preprocessed.
std::vector<Tensor> cifar_images() {
  const auto dir = data_dir() / "images" / "cifar10-jpeg";
  std::vector<std::string> files;
  for (const std::string& name : cifar10_class_names())
    files.push_back((dir / (name + "_0000.jpg")).string());
  return load_calibration_samples(files, builtin_model_info("cifar-resnet20").preprocess);
}

Graph cifar_resnet20() {
  return build_model("cifar-resnet20", (repo_data_dir() / "models" / "resnet20.safetensors").string());
}

// Runs `g` on the CPU and on cuda:0; checks from the CUDA session's plan log that every
// node runs on the GPU. Returns {cpu output, cuda output}.
std::pair<Tensor, Tensor> run_cpu_and_cuda(const Graph& g, const Tensor& input,
                                           const std::string& name) {
  Session cpu(clone_graph(g));
  const Tensor on_cpu = cpu.run_one(input);
  SessionOptions options;
  options.device = Device::cuda(0);
  options.verbose = true;
  Tensor on_cuda;
  const std::string log = capture_stderr(name, [&] {
    Session cuda(clone_graph(g), options);
    on_cuda = cuda.run_one(input);
  });
  INFO(name << ": the CUDA session's log:\n" << log);
  CHECK(log.find(" on cuda:0 with ") != std::string::npos);
  CHECK(log.find(" on cpu with ") == std::string::npos);
  return {on_cpu, on_cuda};
}

Tensor random_input(Shape shape, uint32_t seed) {
  std::mt19937 rng(seed);
  return random_tensor(std::move(shape), rng, -2.f, 2.f);
}

TEST_CASE("fp32 ResNets run on CUDA and match the CPU", "[cuda][resnet]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA ResNet fp32 test");
    return;
  }
  {
    auto [cpu, gpu] = run_cpu_and_cuda(build_model("resnet18"), random_input({2, 3, 224, 224}, 1),
                                       "resnet18_fp32");
    CHECK(relative_difference(gpu, cpu) <= 1e-3);
  }
  {
    auto [cpu, gpu] =
        run_cpu_and_cuda(cifar_resnet20(), stack_batch(cifar_images()), "resnet20_fp32");
    CHECK(relative_difference(gpu, cpu) <= 1e-3);
  }
}

TEST_CASE("int8 ResNets on CUDA equal the CPU int8 kernels bit for bit", "[cuda][int8][resnet]") {
  if (!cuda::available()) {
    WARN("no GPU: skipping the CUDA ResNet int8 test");
    return;
  }
  CalibrationOptions co;
  co.progress = false;
  {
    // cifar-resnet20 with its real weights, calibrated on the ten images it then runs.
    const std::vector<Tensor> images = cifar_images();
    Graph g = cifar_resnet20();
    Calibrator cal(g, co);
    cal.add_all(images);
    quantize_graph(g, cal.table(CalibrationMethod::percentile));
    auto [cpu, gpu] = run_cpu_and_cuda(g, stack_batch(images), "resnet20_int8");
    require_equal(gpu, cpu);
  }
  {
    // Seeded ResNet-18 at batch 2, calibrated on other random inputs.
    Graph g = build_model("resnet18");
    Calibrator cal(g, co);
    cal.add(random_input({2, 3, 224, 224}, 2));
    quantize_graph(g, cal.table(CalibrationMethod::minmax));
    auto [cpu, gpu] = run_cpu_and_cuda(g, random_input({2, 3, 224, 224}, 3), "resnet18_int8");
    require_equal(gpu, cpu);
  }
}

}  // namespace
}  // namespace minfer::test
