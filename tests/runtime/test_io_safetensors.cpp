#include "io_test_util.h"
#include "repo_data.h"

using namespace minfer;
using namespace minfer::test;

namespace {

std::string st_file(const std::string& header, const std::string& data) {
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

}  // namespace

TEST_CASE("safetensors: loads the pretrained ResNet-20", "[io]") {
  auto path = (repo_data_dir() / "models" / "resnet20.safetensors").string();
  auto w = load_safetensors(path);
  // conv1 + 18 block convs, 19 BatchNorms x 4, linear weight + bias.
  CHECK(w.size() == 19 + 19 * 4 + 2);
  REQUIRE(w.count("conv1.weight"));
  CHECK(w.at("conv1.weight").shape() == Shape{16, 3, 3, 3});
  CHECK(w.at("conv1.weight").dtype() == DType::f32);
  CHECK(w.at("layer3.2.conv2.weight").shape() == Shape{64, 64, 3, 3});
  CHECK(w.at("linear.weight").shape() == Shape{10, 64});
  CHECK(w.at("linear.bias").shape() == Shape{10});
  for (float v : w.at("bn1.running_var").to_vector<float>()) CHECK(v > 0);
  double sum = 0;
  for (float v : w.at("conv1.weight").to_vector<float>()) sum += std::abs(v);
  CHECK(sum > 1.0);  // real weights, not zeros
}

TEST_CASE("safetensors: save/load round trip, metadata ignored", "[io]") {
  auto dir = temp_dir("st_roundtrip");
  std::mt19937 rng(1);
  std::map<std::string, Tensor> in{{"a.weight", random_tensor(Shape{3, 4}, rng)},
                                   {"b", Tensor::from_vector<int64_t>({1, -2, 3}, Shape{3})},
                                   {"c", Tensor::from_vector<int8_t>({-7, 7}, Shape{2, 1})},
                                   {"d", Tensor::from_vector<uint8_t>({200}, Shape{})},
                                   {"e", Tensor::from_vector<int32_t>({5, 6}, Shape{2})},
                                   {"f", Tensor::from_vector<bool>({true, false, true}, Shape{3})},
                                   {"g", Tensor(DType::f16, Shape{2, 2})},
                                   {"empty", Tensor(DType::f32, Shape{0, 5})},
                                   {"name \"with\" quotes\\", Tensor::scalar<float>(1.5f)}};
  auto path = (dir / "t.safetensors").string();
  save_safetensors(in, path);
  auto out = load_safetensors(path);
  REQUIRE(out.size() == in.size());
  for (const auto& [name, t] : in) {
    INFO(name);
    REQUIRE(out.count(name));
    CHECK(tensors_equal(out.at(name), t));
  }
  // The data starts 8-byte aligned after the header, as the reference writer does.
  std::string bytes = read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  CHECK(n % 8 == 0);

  std::string header =
      R"({"__metadata__":{"format":"pt"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  write_bytes(dir / "m.safetensors", st_file(header, std::string(8, '\0')));
  auto m = load_safetensors((dir / "m.safetensors").string());
  CHECK(m.size() == 1);
  CHECK(m.at("x").shape() == Shape{2});
}

TEST_CASE("safetensors: corrupted files are refused with clear errors", "[io]") {
  auto dir = temp_dir("st_errors");
  auto path = (dir / "bad.safetensors").string();
  std::string good = read_bytes(repo_data_dir() / "models" / "resnet20.safetensors");

  require_error([&] { load_safetensors((dir / "none.safetensors").string()); },
                ErrorCode::InvalidArgument, {"none.safetensors", "cannot open"});

  write_bytes(path, good.substr(0, good.size() - 100));  // the last tensor loses its end
  require_error([&] { load_safetensors(path); }, ErrorCode::InvalidModel,
                {path, "run past the end", "truncated"});

  write_bytes(path, good.substr(0, 5));
  require_error([&] { load_safetensors(path); }, ErrorCode::InvalidModel, {path, "truncated"});

  write_bytes(path, good.substr(0, 200));
  require_error([&] { load_safetensors(path); }, ErrorCode::InvalidModel,
                {path, "header length", "larger than the file"});

  std::string huge = good;
  huge[7] = '\x7f';  // header length ~ 2^63
  write_bytes(path, huge);
  require_error([&] { load_safetensors(path); }, ErrorCode::InvalidModel,
                {path, "larger than the file"});

  std::string garbled = good;
  garbled[8] = '[';  // the header's opening brace
  write_bytes(path, garbled);
  require_error([&] { load_safetensors(path); }, ErrorCode::InvalidModel, {path, "bad JSON"});

  std::string data(64, '\0');
  auto expect = [&](const std::string& header, ErrorCode code,
                    const std::vector<std::string>& parts) {
    INFO(header);
    write_bytes(path, st_file(header, data));
    std::vector<std::string> all = parts;
    all.push_back(path);
    require_error([&] { load_safetensors(path); }, code, all);
  };
  expect(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
         R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
         ErrorCode::InvalidModel, {"'a'", "'b'", "overlap"});
  expect(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "begin after their end"});
  expect(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "hold 8 bytes", "needs 12"});
  expect(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[60,68]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "run past the end"});
  expect(R"({"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}})", ErrorCode::Unsupported,
         {"tensor 'a'", "BF16"});
  expect(R"({"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "non-negative"});
  expect(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]}})",
         ErrorCode::InvalidModel, {"tensor 'a'", "absurdly large"});
  expect(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "\"shape\""});
  expect(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", ErrorCode::InvalidModel,
         {"tensor 'a'", "[begin, end]"});
  expect(R"({"a":3})", ErrorCode::InvalidModel, {"tensor 'a'", "expected an object"});
  expect(R"(["a"])", ErrorCode::InvalidModel, {"not a JSON object"});
  expect(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})", ErrorCode::InvalidModel,
         {"bad JSON", "expected '}'"});
  expect(R"({"a":{}, "a":{}})", ErrorCode::InvalidModel, {"bad JSON", "duplicate key"});
}
