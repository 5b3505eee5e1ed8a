#include <cstring>

#include "io_test_util.h"

using namespace minfer;
using namespace minfer::test;

namespace {

// f16 bits of a float that f16 represents exactly (normal numbers and zero only).
uint16_t half_bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) == 0) return static_cast<uint16_t>(x >> 16);
  uint32_t sign = (x >> 16) & 0x8000, exp = ((x >> 23) & 0xff) - 127 + 15, man = x & 0x7fffff;
  return static_cast<uint16_t>(sign | (exp << 10) | (man >> 13));
}

// The arrays of tests/python/npy_interop.py: k = 0..23 shaped [2,3,4].
std::map<std::string, Tensor> expected_arrays() {
  Shape s{2, 3, 4};
  Tensor f4(DType::f32, s), f2(DType::f16, s), i1(DType::i8, s), u1(DType::u8, s),
      i4(DType::i32, s), i8(DType::i64, s), b1(DType::boolean, s);
  for (int k = 0; k < 24; ++k) {
    f4.data<float>()[k] = k * 0.5f - 3;
    static_cast<uint16_t*>(f2.raw())[k] = half_bits(k * 0.5f - 3);
    i1.data<int8_t>()[k] = static_cast<int8_t>(k - 12);
    u1.data<uint8_t>()[k] = static_cast<uint8_t>(k * 10 % 256);
    i4.data<int32_t>()[k] = k * 100000 - 7;
    i8.data<int64_t>()[k] = k * int64_t{1000000000000};
    static_cast<uint8_t*>(b1.raw())[k] = k % 3 == 0;
  }
  return {{"f4", f4},
          {"f2", f2},
          {"i1", i1},
          {"u1", u1},
          {"i4", i4},
          {"i8", i8},
          {"b1", b1},
          {"scalar", Tensor::scalar<float>(2.5f)},
          {"empty", Tensor(DType::f32, Shape{0, 3})}};
}

// A .npy file as numpy lays it out: magic, version, header length, padded header, data.
std::string npy_file(int major, const std::string& dict, const std::string& data) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string header = dict;
  size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < prefix - 8; ++i)
    out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string floats(std::vector<float> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

}  // namespace

TEST_CASE("npy: save and load round-trip every dtype and rank", "[io]") {
  auto dir = temp_dir("npy_roundtrip");
  for (const auto& [name, t] : expected_arrays()) {
    INFO(name);
    auto path = (dir / (name + ".npy")).string();
    save_npy(t, path);
    Tensor back = load_npy(path);
    CHECK(tensors_equal(back, t));
  }
  Tensor v = Tensor::from_vector<int64_t>({7, -8, 9}, Shape{3});
  save_npy(v, (dir / "v.npy").string());
  CHECK(read_bytes(dir / "v.npy").find("'shape': (3,)") != std::string::npos);
  CHECK(read_bytes(dir / "v.npy").size() == 128 + 24);  // header padded to 64 bytes
  CHECK(load_npy((dir / "v.npy").string()).to_vector<int64_t>() == std::vector<int64_t>{7, -8, 9});
}

TEST_CASE("npy: reads the layouts numpy writes (versions 1, 2, 3)", "[io]") {
  auto dir = temp_dir("npy_versions");
  std::string data = floats({1, 2, 3, 4, 5, 6});
  for (int major : {1, 2, 3}) {
    INFO("version " << major);
    write_bytes(
        dir / "a.npy",
        npy_file(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
    Tensor t = load_npy((dir / "a.npy").string());
    CHECK(t.shape() == Shape{2, 3});
    CHECK(t.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  }
  // Keys in another order, double quotes, no trailing comma, a Python 2 long.
  write_bytes(
      dir / "b.npy",
      npy_file(1, "{\"shape\": (6L,), \"fortran_order\": False, \"descr\": \"<f4\"}", data));
  CHECK(load_npy((dir / "b.npy").string()).shape() == Shape{6});
}

TEST_CASE("npy: errors name the file and the problem", "[io]") {
  auto dir = temp_dir("npy_errors");
  auto path = (dir / "x.npy").string();
  std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  std::string data = floats({1, 2, 3, 4, 5, 6});

  require_error([&] { load_npy((dir / "missing.npy").string()); }, ErrorCode::InvalidArgument,
                {"missing.npy", "cannot open"});

  write_bytes(path, "PK\x03\x04 this is a zip file, not an npy file");
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "bad magic"});

  write_bytes(path, "\x93NUMPY\x01");
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "truncated", "7 bytes"});

  write_bytes(path, npy_file(4, good_dict, data));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "version 4"});

  std::string whole = npy_file(1, good_dict, data);
  write_bytes(path, whole.substr(0, whole.size() - 5));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel,
                {path, "truncated", "19 bytes", "[2,3] f32 needs 24"});

  write_bytes(path, whole.substr(0, 40));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "truncated", "header"});

  write_bytes(path, whole + "junk");
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "28 bytes"});

  write_bytes(path, npy_file(1, "{'descr': '<f4', 'shape': (2, 3), }", data));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "bad header"});

  write_bytes(path,
              npy_file(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }", data));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "expected a dimension"});

  write_bytes(path,
              npy_file(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", data));
  require_error([&] { load_npy(path); }, ErrorCode::Unsupported, {path, "Fortran"});

  for (std::string descr : {">f4", "<f8", "<c8", "|O"}) {
    write_bytes(
        path,
        npy_file(1, "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (6,), }", data));
    require_error([&] { load_npy(path); }, ErrorCode::Unsupported, {path, descr});
  }

  write_bytes(path, npy_file(1,
                             "{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (100000000000, 100000000000), }",
                             data));
  require_error([&] { load_npy(path); }, ErrorCode::InvalidModel, {path, "absurdly large"});
}

TEST_CASE("npy: numpy reads our files and we read numpy's", "[io][python]") {
  auto dir = temp_dir("npy_interop");
  auto want = expected_arrays();
  for (const auto& [name, t] : want) save_npy(t, (dir / ("minfer_" + name + ".npy")).string());
  REQUIRE(run_python("npy_interop.py", "'" + dir.string() + "'") == 0);
  for (const auto& [name, t] : want) {
    INFO(name);
    CHECK(tensors_equal(load_npy((dir / ("numpy_" + name + ".npy")).string()), t));
  }
  CHECK(tensors_equal(load_npy((dir / "numpy_v2.npy").string()), want["i4"]));
  CHECK(tensors_equal(load_npy((dir / "numpy_v3.npy").string()), want["i4"]));
}
