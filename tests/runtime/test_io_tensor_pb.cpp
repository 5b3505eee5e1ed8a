#include <onnx/onnx_pb.h>

#include "io_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

std::string serialized(const onnx::TensorProto& p) {
  std::string s;
  REQUIRE(p.SerializeToString(&s));
  return s;
}

}  // namespace

TEST_CASE("tensor pb: loads ONNX conformance test data", "[io]") {
  auto dir = data_dir() / "onnx-node-tests" / "test_basic_conv_with_padding" / "test_data_set_0";
  Tensor x = load_tensor_pb((dir / "input_0.pb").string());
  REQUIRE(x.shape() == Shape{1, 1, 5, 5});
  REQUIRE(x.dtype() == DType::f32);
  for (int i = 0; i < 25; ++i) CHECK(x.data<float>()[i] == float(i));  // np.arange(25)
  Tensor w = load_tensor_pb((dir / "input_1.pb").string());
  CHECK(w.shape() == Shape{1, 1, 3, 3});
  CHECK(w.to_vector<float>() == std::vector<float>(9, 1.f));
}

TEST_CASE("tensor pb: save/load round trip and typed fields", "[io]") {
  auto dir = temp_dir("tensor_pb");
  std::mt19937 rng(3);
  for (const Tensor& t :
       {random_tensor(Shape{2, 3}, rng), Tensor::from_vector<int64_t>({-1, 1LL << 40}, Shape{2}),
        Tensor::from_vector<int8_t>({-128, 127, 0}, Shape{3, 1}),
        Tensor::from_vector<bool>({true, false}, Shape{2}), Tensor(DType::f16, Shape{4}),
        Tensor::scalar<int32_t>(42), Tensor(DType::u8, Shape{0, 2})}) {
    auto path = (dir / "t.pb").string();
    save_tensor_pb(t, path, "my_tensor");
    onnx::TensorProto p;
    REQUIRE(p.ParseFromString(read_bytes(path)));
    CHECK(p.name() == "my_tensor");
    CHECK(tensors_equal(load_tensor_pb(path), t));
  }

  // The typed fields (float_data, int32_data, int64_data) instead of raw_data.
  onnx::TensorProto p;
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.add_float_data(1.5f);
  p.add_float_data(-2.f);
  write_bytes(dir / "f.pb", serialized(p));
  CHECK(load_tensor_pb((dir / "f.pb").string()).to_vector<float>() ==
        std::vector<float>{1.5f, -2.f});
  p.Clear();
  p.set_data_type(onnx::TensorProto::INT8);
  p.add_dims(3);
  for (int v : {-5, 0, 100}) p.add_int32_data(v);
  write_bytes(dir / "i8.pb", serialized(p));
  CHECK(load_tensor_pb((dir / "i8.pb").string()).to_vector<int8_t>() ==
        std::vector<int8_t>{-5, 0, 100});
  p.Clear();
  p.set_data_type(onnx::TensorProto::FLOAT16);
  p.add_dims(1);
  p.add_int32_data(0x3c00);  // 1.0 in f16
  write_bytes(dir / "h.pb", serialized(p));
  Tensor h = load_tensor_pb((dir / "h.pb").string());
  CHECK(static_cast<const uint16_t*>(h.raw())[0] == 0x3c00);
  p.Clear();
  p.set_data_type(onnx::TensorProto::INT64);
  p.add_int64_data(-9);  // no dims: a scalar
  write_bytes(dir / "s.pb", serialized(p));
  Tensor s = load_tensor_pb((dir / "s.pb").string());
  CHECK(s.rank() == 0);
  CHECK(s.data<int64_t>()[0] == -9);
}

TEST_CASE("tensor pb: errors name the file, the tensor and the problem", "[io]") {
  auto dir = temp_dir("tensor_pb_errors");
  auto path = (dir / "bad.pb").string();
  require_error([&] { load_tensor_pb((dir / "missing.pb").string()); }, ErrorCode::InvalidArgument,
                {"missing.pb"});

  write_bytes(path, "\xff\xff\xff\xff garbage");
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel,
                {path, "not a valid serialized ONNX TensorProto"});

  onnx::TensorProto p;
  p.set_name("x");
  p.set_data_type(onnx::TensorProto::FLOAT);
  p.add_dims(2);
  p.add_dims(3);
  p.set_raw_data(std::string(20, '\0'));
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel,
                {path, "'x'", "20 bytes", "[2,3] f32 needs 24"});

  p.clear_raw_data();
  for (int i = 0; i < 5; ++i) p.add_float_data(0);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel,
                {path, "float_data has 5 values", "needs 6"});

  // Dims far beyond memory with a few bytes of data: refused before any allocation.
  p.clear_float_data();
  p.clear_dims();
  p.add_dims(int64_t{1} << 31);
  p.add_dims(int64_t{1} << 3);
  p.set_raw_data("abcd");
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel, {path, "4 bytes"});
  p.add_dims(int64_t{1} << 40);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel, {path, "absurdly large"});
  p.clear_dims();
  p.add_dims(-1);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel, {path, "negative"});

  p.clear_dims();
  p.set_data_type(onnx::TensorProto::DOUBLE);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::Unsupported, {path, "'x'", "DOUBLE"});
  p.set_data_type(17);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::Unsupported, {"FLOAT8E4M3FN"});
  p.set_data_type(onnx::TensorProto::UNDEFINED);
  write_bytes(path, serialized(p));
  require_error([&] { load_tensor_pb(path); }, ErrorCode::InvalidModel, {path, "UNDEFINED"});
}

TEST_CASE("tensor pb: every conformance .pb matches onnx.numpy_helper", "[io][python]") {
  auto root = data_dir() / "onnx-node-tests";
  auto out = temp_dir("tensor_pb_oracle");
  REQUIRE(run_python("dump_pb.py", "'" + root.string() + "' '" + out.string() + "'") == 0);
  std::istringstream index(read_bytes(out / "index.tsv"));
  std::string line;
  int compared = 0, refused = 0;
  while (std::getline(index, line)) {
    std::istringstream row(line);
    std::string pb, type, npy;
    std::getline(row, pb, '\t');
    std::getline(row, type, '\t');
    std::getline(row, npy, '\t');
    INFO(pb << " (" << type << ")");
    if (type == "NOT_A_TENSOR") {  // whatever it parses as, it must be refused cleanly
      CHECK_THROWS_AS(load_tensor_pb(pb), Error);
    } else if (npy == "-") {
      require_error([&] { load_tensor_pb(pb); }, ErrorCode::Unsupported, {pb, type});
      ++refused;
    } else {
      CHECK(tensors_equal(load_tensor_pb(pb), load_npy(npy)));
      ++compared;
    }
  }
  CHECK(compared > 500);
  CHECK(refused > 0);
}
