// Accuracy of int8 cifar-resnet20 with the real weights: calibrated on 100 images (10 per
// class), evaluated on all 500 of cifar10-jpeg, for every calibration method.
#include <fstream>
#include <sstream>

#include "int8/int8_test_util.h"
#include "minfer/calibrate.h"
#include "repo_data.h"
#include "runtime/io_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

struct Labelled {
  std::vector<Tensor> images;  // [1,3,32,32] each
  std::vector<int> labels;
  std::vector<Tensor> calibration;  // the first 10 images of each class
};

const Labelled& cifar() {
  static Labelled data = [] {
    Labelled d;
    auto dir = data_dir() / "images" / "cifar10-jpeg";
    std::ifstream csv(dir / "labels.csv");
    REQUIRE(csv);
    std::string line;
    std::getline(csv, line);  // header
    const ImagePreprocess pre = builtin_model_info("cifar-resnet20").preprocess;
    std::map<int, int> per_class;
    while (std::getline(csv, line)) {
      std::stringstream ss(line);
      std::string file, label;
      std::getline(ss, file, ',');
      std::getline(ss, label, ',');
      Tensor img = load_image((dir / file).string(), pre);
      int y = std::stoi(label);
      d.images.push_back(img);
      d.labels.push_back(y);
      if (per_class[y]++ < 10) d.calibration.push_back(img);
    }
    return d;
  }();
  return data;
}

std::vector<int> predictions(const Session& s, const std::vector<Tensor>& images) {
  std::vector<int> out;
  for (size_t i = 0; i < images.size(); i += 50) {
    std::vector<Tensor> batch(images.begin() + i, images.begin() + std::min(i + 50, images.size()));
    Tensor logits = s.run_one(stack_batch(batch));
    for (int64_t n = 0; n < logits.dim(0); ++n) {
      const float* row = logits.data<float>() + n * logits.dim(1);
      out.push_back(static_cast<int>(std::max_element(row, row + logits.dim(1)) - row));
    }
  }
  return out;
}

int correct(const std::vector<int>& pred, const std::vector<int>& labels) {
  int c = 0;
  for (size_t i = 0; i < pred.size(); ++i) c += pred[i] == labels[i];
  return c;
}

int agree(const std::vector<int>& a, const std::vector<int>& b) {
  int c = 0;
  for (size_t i = 0; i < a.size(); ++i) c += a[i] == b[i];
  return c;
}

}  // namespace

// The fp32 model, its predictions and a Calibrator fed with the 100 calibration images,
// computed once for the test cases below.
struct Fixture {
  Graph fp32;
  std::vector<int> fp32_pred;
  std::unique_ptr<Calibrator> cal;
};

const Fixture& fixture() {
  static Fixture f = [] {
    Fixture f;
    f.fp32 =
        build_model("cifar-resnet20", (repo_data_dir() / "models" / "resnet20.safetensors").string());
    f.fp32_pred = predictions(Session(clone_graph(f.fp32)), cifar().images);
    CalibrationOptions co;
    co.progress = false;
    f.cal = std::make_unique<Calibrator>(f.fp32, co);
    f.cal->add_all(cifar().calibration);
    return f;
  }();
  return f;
}

TEST_CASE("int8 cifar-resnet20 stays within 5 images of fp32 on cifar10-jpeg", "[int8][slow]") {
  const Labelled& d = cifar();
  REQUIRE(d.images.size() == 500);
  REQUIRE(d.calibration.size() == 100);
  const Fixture& f = fixture();
  const int fp32_top1 = correct(f.fp32_pred, d.labels);
  CHECK(fp32_top1 == 399);
  for (auto m : {CalibrationMethod::percentile, CalibrationMethod::minmax,
                 CalibrationMethod::entropy, CalibrationMethod::mse}) {
    Graph g = clone_graph(f.fp32);
    quantize_graph(g, f.cal->table(m));
    Session int8(std::move(g));
    const std::vector<int> pred = predictions(int8, d.images);
    const int top1 = correct(pred, d.labels), same = agree(pred, f.fp32_pred);
    WARN("cifar-resnet20 int8 (" << calibration_method_name(m) << "): top-1 " << top1
                                 << "/500 (fp32 " << fp32_top1 << "), agreement with fp32 " << same
                                 << "/500");
    if (m == CalibrationMethod::percentile) {  // the default method
      CHECK(std::abs(top1 - fp32_top1) <= 5);
      CHECK(same >= 485);  // 97 %
    }
  }
}

TEST_CASE("ONNX Runtime on minfer's QDQ export agrees with minfer int8", "[int8][slow][python]") {
  const Labelled& d = cifar();
  const Fixture& f = fixture();
  Graph g = clone_graph(f.fp32);
  quantize_graph(g, f.cal->table(CalibrationMethod::percentile));
  auto dir = temp_dir("int8_qdq_ort");
  const std::string model = (dir / "resnet20_int8_qdq.onnx").string();
  save_onnx(g, model);
  const std::vector<int> pred = predictions(Session(std::move(g)), d.images);
  save_npy(stack_batch(d.images), (dir / "inputs.npy").string());
  std::vector<int64_t> top1(pred.begin(), pred.end());
  save_npy(Tensor::from_vector(top1, Shape{static_cast<int64_t>(top1.size())}),
           (dir / "top1.npy").string());
  CHECK(run_python("int8_qdq_ort.py", "'" + model + "' '" + (dir / "inputs.npy").string() + "' '" +
                                          (dir / "top1.npy").string() + "' 0.99") == 0);
}

TEST_CASE("a QDQ model from ONNX Runtime's quantizer folds into int8 ops and agrees with ORT",
          "[int8][slow][python]") {
  const Labelled& d = cifar();
  const Fixture& f = fixture();
  auto dir = temp_dir("int8_ort_quantizer");
  const std::string fp32_path = (dir / "resnet20.onnx").string();
  save_onnx(f.fp32, fp32_path);
  save_npy(stack_batch(d.calibration), (dir / "calib.npy").string());
  save_npy(stack_batch(d.images), (dir / "inputs.npy").string());
  for (const std::string activations : {"int8", "uint8"}) {
    INFO("ONNX Runtime quantizer with " << activations << " activations");
    const std::string qdq_path = (dir / ("resnet20_ort_qdq_" + activations + ".onnx")).string();
    REQUIRE(run_python("int8_ort_quantize.py", "'" + fp32_path + "' '" +
                                                   (dir / "calib.npy").string() + "' '" + qdq_path +
                                                   "' " + activations) == 0);
    Session s(load_onnx(qdq_path));
    int qconv = 0, conv = 0;
    for (const Node* n : s.graph().nodes()) {
      qconv += n->op_type == "QConv";
      conv += n->op_type == "Conv" || n->op_type == "FusedConv";
    }
    CHECK(qconv == 19);
    CHECK(conv == 0);
    const std::vector<int> pred = predictions(s, d.images);
    CHECK(agree(pred, f.fp32_pred) >= 485);
    // ONNX Runtime's own u8 x s8 kernels use vpmaddubsw on CPUs without VNNI, which saturates:
    // there it is the less accurate of the two, so only the int8 model is compared with it.
    if (activations == "uint8") continue;
    std::vector<int64_t> top1(pred.begin(), pred.end());
    save_npy(Tensor::from_vector(top1, Shape{static_cast<int64_t>(top1.size())}),
             (dir / "top1.npy").string());
    CHECK(run_python("int8_qdq_ort.py", "'" + qdq_path + "' '" + (dir / "inputs.npy").string() +
                                            "' '" + (dir / "top1.npy").string() + "' 0.99") == 0);
  }
}
