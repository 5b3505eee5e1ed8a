// A model quantized by ONNX Runtime's quantize_dynamic (DynamicQuantizeLinear, ConvInteger,
// MatMulInteger, Cast, Mul) from a minfer-exported ResNet-20 with its real weights: minfer
// runs every op of it and agrees with ONNX Runtime's top-1 on the 500 CIFAR-10 JPEGs.
#include <map>

#include "conformance_test_util.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;

TEST_CASE("dynamic-quantized: ONNX Runtime's quantize_dynamic ResNet-20 runs in minfer",
          "[integer][python][slow]") {
  const fs::path dir = temp_dir("dynamic_quantized");
  const CifarJpegs data = write_resnet20_and_cifar_jpegs(dir);
  REQUIRE(run_python("ort_integer_ops.py", "dynamic '" + (dir / "resnet20.onnx").string() + "' '" +
                                               (dir / "x.npy").string() + "' '" + dir.string() +
                                               "'") == 0);
  const std::string model = (dir / "dynamic.onnx").string();

  SessionOptions options;
  options.threads = 2;
  Session s = Session::from_file(model, options);
  std::map<std::string, int> ops;
  for (const Node* n : s.graph().nodes()) ops[n->op_type]++;
  // What ONNX Runtime emits for the 19 convolutions and the classifier, left as they are by
  // minfer's passes.
  CHECK(ops["ConvInteger"] == 19);
  CHECK(ops["MatMulInteger"] == 1);
  CHECK(ops["DynamicQuantizeLinear"] == 20);
  CHECK(ops["Cast"] == 20);

  const std::vector<int64_t> ort =
      load_npy((dir / "dynamic_top1.npy").string()).to_vector<int64_t>();
  REQUIRE(ort.size() == 500);
  // DynamicQuantizeLinear's range is per tensor, so run the same batches of 100 as ONNX Runtime.
  const std::vector<int64_t> ours = top1_in_batches(s, data.x, 100);
  int agree = 0, ours_right = 0, ort_right = 0;
  for (size_t i = 0; i < 500; ++i) {
    agree += ours[i] == ort[i];
    ours_right += ours[i] == data.labels[i];
    ort_right += ort[i] == data.labels[i];
  }
  WARN("dynamic-quantized ResNet-20: minfer agrees with ONNX Runtime on "
       << agree << "/500 images; accuracy vs labels: ONNX Runtime " << ort_right << "/500, minfer "
       << ours_right << "/500 (fp32: 399/500)");
  CHECK(agree >= 495);  // 99 %

  // The command line shows the model and what each pass did to it (nothing).
  const CliResult inspect = cli("inspect '" + model + "' --passes");
  INFO(inspect.out);
  CHECK(inspect.code == 0);
  CHECK(inspect.out.find("ConvInteger") != std::string::npos);
  CHECK(inspect.out.find("MatMulInteger") != std::string::npos);
}
