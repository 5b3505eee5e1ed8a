// Whole ResNets on CUDA: every node runs on the GPU, fp32 logits match the CPU within 1e-3
// (relative to the largest logit), and int8 outputs equal the CPU int8 kernels bit for bit,
// replayed as a CUDA graph or run step by step, from host or device inputs.
#include <algorithm>

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
  if (!cuda_available()) {
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
  if (!cuda_available()) {
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

// Every image of cifar10-jpeg (500), preprocessed, in file name order.
std::vector<Tensor> all_cifar_images() {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(data_dir() / "images" / "cifar10-jpeg"))
    if (e.path().extension() == ".jpg") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 500);
  return load_calibration_samples(files, builtin_model_info("cifar-resnet20").preprocess);
}

TEST_CASE("int8 CIFAR ResNet-20 and -56 on CUDA equal the CPU on all 500 CIFAR images",
          "[cuda][int8][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the 500-image CUDA int8 test");
    return;
  }
  const std::vector<Tensor> images = all_cifar_images();
  CalibrationOptions co;
  co.progress = false;
  for (const char* name : {"cifar-resnet20", "cifar-resnet56"}) {
    INFO(name);
    // ResNet-20 with its real weights; ResNet-56 with seeded ones.
    Graph g = std::string(name) == "cifar-resnet20" ? cifar_resnet20() : build_model(name);
    Calibrator cal(g, co);
    for (size_t i = 0; i < 20; ++i) cal.add(images[i]);
    quantize_graph(g, cal.table(CalibrationMethod::percentile));
    Session cpu(clone_graph(g));
    SessionOptions graph_options, eager_options;
    graph_options.device = eager_options.device = Device::cuda(0);
    eager_options.cuda_graphs = false;
    Session with_graph(clone_graph(g), graph_options), eager(clone_graph(g), eager_options);
    for (size_t b = 0; b < images.size(); b += 100) {
      const Tensor batch =
          stack_batch(std::vector<Tensor>(images.begin() + b, images.begin() + b + 100));
      const Tensor want = cpu.run_one(batch);
      INFO("images " << b << ".." << b + 99);
      require_equal(with_graph.run_one(batch), want);  // captured (first batch), then replayed
      require_equal(eager.run_one(batch), want);
    }
    const std::map<std::string, Shape> shape{{with_graph.input_names()[0], Shape{100, 3, 32, 32}}};
    const PlanStats stats = with_graph.plan_stats(shape);
    CHECK(stats.cuda_graph);
    CHECK_FALSE(eager.plan_stats(shape).cuda_graph);
    // The plan's GPU memory: its int8 weights (under 1 MB for ResNet-56) and one run's arena.
    CHECK(stats.device_bytes > 0);
    CHECK(stats.device_bytes < (size_t{64} << 20));
    CHECK(cpu.plan_stats(shape).device_bytes == 0);
  }
}

TEST_CASE("A CUDA session takes inputs that are already on the GPU", "[cuda][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the device-input test");
    return;
  }
  const Tensor input = stack_batch(cifar_images());
  SessionOptions options;
  options.device = Device::cuda(0);
  Session session(cifar_resnet20(), options);
  const Tensor from_host = session.run_one(input);
  auto dc = cuda_backend().create_context(0);
  DeviceMemory memory(*dc, input.nbytes());
  cuda_backend().copy_to_device(*dc, memory.get(), input.raw(), input.nbytes());
  cuda_backend().synchronize(*dc);
  const Tensor on_gpu = Tensor::view(memory.get(), input.dtype(), input.shape(), Device::cuda(0));
  require_equal(session.run_one(on_gpu), from_host);
  require_equal(session.run_one(on_gpu), from_host);  // the replayed graph reads it again
  // A CPU session refuses it, naming the input and the device.
  Session cpu(cifar_resnet20());
  try {
    cpu.run_one(on_gpu);
    FAIL("a CPU session ran a GPU tensor");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK(std::string(e.what()).find("cuda:0") != std::string::npos);
  }
}

TEST_CASE("A CUDA session runs into GPU memory, in order on the caller's stream",
          "[cuda][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the run_into test");
    return;
  }
  const Tensor input = stack_batch(cifar_images());
  SessionOptions options;
  options.device = Device::cuda(0);
  Session session(cifar_resnet20(), options);
  const std::string in_name = session.input_names()[0], out_name = session.output_names()[0];
  const Tensor want = session.run_one(input);

  // The caller's pipeline: its own stream, the input staged on the GPU by a copy still queued
  // there, the logits left on the GPU and copied back on that stream. run_into must start
  // after the staging copy and finish before the copy back, without a host wait in between.
  auto caller = cuda_backend().create_context(0);
  void* const stream = cuda_backend().stream_of(*caller);
  DeviceMemory staged(*caller, input.nbytes()), in_gpu(*caller, input.nbytes()),
      out_gpu(*caller, want.nbytes());
  cuda_backend().copy_to_device(*caller, staged.get(), input.raw(), input.nbytes());
  cuda_backend().synchronize(*caller);
  for (bool graphs : {true, false}) {
    options.cuda_graphs = graphs;
    Session s(cifar_resnet20(), options);
    for (int round = 0; round < 3; ++round) {
      INFO("CUDA graphs " << graphs << ", round " << round);
      cuda_backend().copy_on_device(*caller, in_gpu.get(), staged.get(), input.nbytes());
      Tensor got(want.dtype(), want.shape());
      const Tensor out = Tensor::view(out_gpu.get(), want.dtype(), want.shape(), Device::cuda(0));
      const Tensor in = Tensor::view(in_gpu.get(), input.dtype(), input.shape(), Device::cuda(0));
      s.run_into({{in_name, in}}, {{out_name, out}}, RunOptions{stream});
      cuda_backend().copy_to_host(*caller, got.raw(), out_gpu.get(), got.nbytes());
      cuda_backend().synchronize(*caller);
      require_equal(got, want);
      cuda_backend().copy_on_device(*caller, out_gpu.get(), staged.get(),
                                    want.nbytes());  // clobber
    }
    // The replayed graph was captured (nothing in the run, cuBLAS included, allocates then).
    CHECK(s.plan_stats({{in_name, input.shape()}}).cuda_graph == graphs);
    // Host memory as the target, without a stream: the call returns with the outputs there.
    Tensor host_out(want.dtype(), want.shape());
    s.run_into({{in_name, input}}, {{out_name, host_out}});
    require_equal(host_out, want);
  }
}

// A graph plan reads GPU inputs and writes run_into's GPU outputs in place (plan.cpp,
// bind_device_buffers): each new pair of buffers is a new capture, buffers that are not
// aligned as the arena's tensors go through the copies, and after enough changes the context
// keeps the copies. Whichever way, each run gives its own input's logits.
TEST_CASE("A CUDA graph plan reads and writes the caller's GPU buffers in place",
          "[cuda][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the in-place GPU buffer test");
    return;
  }
  std::vector<Tensor> images = cifar_images();
  const Tensor first = stack_batch(images);
  std::reverse(images.begin(), images.end());
  const Tensor second = stack_batch(images);
  SessionOptions options;
  options.device = Device::cuda(0);
  Session s(cifar_resnet20(), options);
  const std::string in_name = s.input_names()[0], out_name = s.output_names()[0];
  const Tensor want[2] = {s.run_one(first), s.run_one(second)};
  REQUIRE_FALSE(relative_difference(want[0], want[1]) == 0.0);
  auto dc = cuda_backend().create_context(0);
  const size_t in_bytes = first.nbytes(), out_bytes = want[0].nbytes(), slack = 64;
  // Each input at the start of a buffer and 16 bytes into another (not arena-aligned); two
  // outputs, used either way.
  DeviceMemory in_gpu[2][2] = {{{*dc, in_bytes}, {*dc, in_bytes + slack}},
                               {{*dc, in_bytes}, {*dc, in_bytes + slack}}};
  DeviceMemory out_gpu[2] = {{*dc, out_bytes + slack}, {*dc, out_bytes + slack}};
  for (int i = 0; i < 2; ++i)
    for (int unaligned = 0; unaligned < 2; ++unaligned)
      cuda_backend().copy_to_device(*dc, in_gpu[i][unaligned].get() + 16 * unaligned,
                           (i ? second : first).raw(), in_bytes);
  cuda_backend().synchronize(*dc);
  auto gpu = [](char* p, const Tensor& like) {
    return Tensor::view(p, like.dtype(), like.shape(), Device::cuda(0));
  };
  for (int round = 0; round < 24; ++round) {
    const int which = round % 2;
    const int unaligned = round % 5 == 4;
    const size_t out_offset = round % 7 == 6 ? 16 : 0;
    INFO("round " << round << ", input " << which << (unaligned ? " unaligned" : "")
                  << ", output +" << out_offset);
    const Tensor in = gpu(in_gpu[which][unaligned].get() + 16 * unaligned, first);
    if (round % 6 == 5) {  // GPU input, host outputs
      require_equal(s.run({{in_name, in}}).at(out_name), want[which]);
      continue;
    }
    char* out = out_gpu[(round / 2) % 2].get() + out_offset;
    cuda_backend().copy_on_device(*dc, out, in_gpu[1 - which][0].get(), out_bytes);  // clobber
    cuda_backend().synchronize(*dc);
    s.run_into({{in_name, in}}, {{out_name, gpu(out, want[0])}});
    Tensor got(want[0].dtype(), want[0].shape());
    cuda_backend().copy_to_host(*dc, got.raw(), out, out_bytes);
    cuda_backend().synchronize(*dc);
    require_equal(got, want[which]);
  }
  CHECK(s.plan_stats({{in_name, first.shape()}}).cuda_graph);
}

TEST_CASE("A CUDA session out of GPU memory throws OutOfMemory and stays usable", "[cuda][resnet]") {
  if (!cuda_available()) {
    WARN("no GPU: skipping the GPU out-of-memory test");
    return;
  }
  SessionOptions options;
  options.device = Device::cuda(0);
  Session session(build_model("resnet18"), options);
  const Tensor small = random_input({2, 3, 224, 224}, 11), large = random_input({64, 3, 224, 224}, 12);
  const Tensor want = session.run_one(small);
  {
    // Everything the GPU has left but a few MiB, in blocks from 1 GiB down to 4 MiB.
    auto dc = cuda_backend().create_context(0);
    std::vector<std::unique_ptr<DeviceMemory>> hog;
    for (size_t block = size_t{1} << 30; block >= (size_t{4} << 20); block /= 2)
      for (;;) {
        try {
          hog.push_back(std::make_unique<DeviceMemory>(*dc, block));
        } catch (const Error& e) {
          REQUIRE(e.code() == ErrorCode::OutOfMemory);
          break;
        }
      }
    INFO(hog.size() << " blocks taken");
    // A new batch needs a new plan (weights and arena on the GPU): it cannot be had.
    try {
      session.run_one(large);
      FAIL("a batch-64 plan fit in a full GPU");
    } catch (const Error& e) {
      CHECK(e.code() == ErrorCode::OutOfMemory);
    }
    require_equal(session.run_one(small), want);  // the planned batch still runs
  }
  // With the memory back, the session plans and runs the large batch, and still the small.
  const Tensor on_gpu = session.run_one(large);
  CHECK(on_gpu.dim(0) == 64);
  require_equal(session.run_one(small), want);
}

}  // namespace
}  // namespace minfer::test
