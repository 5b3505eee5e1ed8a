// A model quantized by ONNX Runtime's quantize_dynamic (DynamicQuantizeLinear, ConvInteger,
// MatMulInteger, Cast, Mul) from a minfer-exported ResNet-20 with its real weights: minfer
// runs every op of it and agrees with ONNX Runtime's top-1 on the 500 CIFAR-10 JPEGs.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "conformance_test_util.h"

using namespace minfer;
using namespace minfer::test;
namespace fs = std::filesystem;

namespace {

// The 500 JPEGs of images/cifar10-jpeg, sorted by name, preprocessed as ResNet-20 expects,
// and their labels from labels.csv.
struct CifarJpegs {
  Tensor x;
  std::vector<int64_t> labels;
};

CifarJpegs cifar_jpegs() {
  const fs::path dir = data_dir() / "images" / "cifar10-jpeg";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".jpg") files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() == 500);
  std::map<std::string, int64_t> label_of;
  std::ifstream csv(dir / "labels.csv");
  for (std::string line; std::getline(csv, line);) {
    std::stringstream ss(line);
    std::string file, label;
    std::getline(ss, file, ',');
    std::getline(ss, label, ',');
    if (!label.empty() && std::isdigit(static_cast<unsigned char>(label[0])))
      label_of[file] = std::stoll(label);
  }
  const ImagePreprocess pre = builtin_model_info("cifar-resnet20").preprocess;
  CifarJpegs r;
  std::vector<Tensor> images;
  for (const std::string& f : files) {
    REQUIRE(label_of.count(f));
    r.labels.push_back(label_of[f]);
    images.push_back(load_image((dir / f).string(), pre));
  }
  r.x = stack_batch(images);
  return r;
}

// Rows [begin, begin + n) of a float [N, ...] tensor.
Tensor rows(const Tensor& t, int64_t begin, int64_t n) {
  Shape s = t.shape();
  const int64_t row = t.numel() / s[0];
  s[0] = n;
  Tensor out(t.dtype(), s);
  std::copy(t.data<float>() + begin * row, t.data<float>() + (begin + n) * row, out.data<float>());
  return out;
}

}  // namespace

TEST_CASE("dynamic-quantized: ONNX Runtime's quantize_dynamic ResNet-20 runs in minfer",
          "[integer][python][slow]") {
  const fs::path dir = temp_dir("dynamic_quantized");
  save_onnx(build_model("cifar-resnet20", (data_dir() / "models/resnet20.safetensors").string()),
            (dir / "resnet20.onnx").string());
  const CifarJpegs data = cifar_jpegs();
  save_npy(data.x, (dir / "x.npy").string());
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
  int agree = 0, ours_right = 0, ort_right = 0;
  for (int64_t b = 0; b < 500; b += 100) {
    const Tensor logits = s.run_one(rows(data.x, b, 100));
    for (int64_t i = 0; i < 100; ++i) {
      const float* l = logits.data<float>() + i * 10;
      const int64_t top1 = std::max_element(l, l + 10) - l;
      agree += top1 == ort[b + i];
      ours_right += top1 == data.labels[b + i];
      ort_right += ort[b + i] == data.labels[b + i];
    }
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
