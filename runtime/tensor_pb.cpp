#include "runtime/tensor_pb.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "minfer/onnx.h"
#include "runtime/file_util.h"

namespace minfer::detail {

namespace fs = std::filesystem;

std::string onnx_type_name(int32_t onnx_type) {
  static const char* const kNames[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",    "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",   "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16",  "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",      "FLOAT4E2M1",
      "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  constexpr int32_t n = sizeof(kNames) / sizeof(kNames[0]);
  if (onnx_type >= 0 && onnx_type < n) return kNames[onnx_type];
  return "type " + std::to_string(onnx_type);
}

DType dtype_from_onnx(int32_t onnx_type, const std::string& what) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT: return DType::f32;
    case onnx::TensorProto::FLOAT16: return DType::f16;
    case onnx::TensorProto::INT8: return DType::i8;
    case onnx::TensorProto::UINT8: return DType::u8;
    case onnx::TensorProto::INT32: return DType::i32;
    case onnx::TensorProto::INT64: return DType::i64;
    case onnx::TensorProto::BOOL: return DType::boolean;
    default: break;
  }
  if (onnx_type == onnx::TensorProto::UNDEFINED)
    throw Error(ErrorCode::InvalidModel, what + ": element type is missing (UNDEFINED)");
  throw Error(ErrorCode::Unsupported,
              what + ": element type " + onnx_type_name(onnx_type) +
                  " is not supported (minfer has FLOAT, FLOAT16, INT8, UINT8, INT32, INT64, BOOL)");
}

int32_t dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::f32: return onnx::TensorProto::FLOAT;
    case DType::f16: return onnx::TensorProto::FLOAT16;
    case DType::i8: return onnx::TensorProto::INT8;
    case DType::u8: return onnx::TensorProto::UINT8;
    case DType::i32: return onnx::TensorProto::INT32;
    case DType::i64: return onnx::TensorProto::INT64;
    case DType::boolean: return onnx::TensorProto::BOOL;
  }
  throw Error(ErrorCode::Internal, "dtype_to_onnx: unknown dtype");
}

namespace {

std::string describe_shape(const std::vector<int64_t>& dims, DType dtype) {
  return Shape(dims).to_string() + " " + dtype_name(dtype);
}

void check_byte_count(uint64_t have, int64_t need, const std::vector<int64_t>& dims, DType dtype,
                      const std::string& what) {
  check(have == static_cast<uint64_t>(need), ErrorCode::InvalidModel,
        what + ": has " + std::to_string(have) + " bytes of data, but its shape " +
            describe_shape(dims, dtype) + " needs " + std::to_string(need));
}

int64_t parse_int_field(const std::string& key, const std::string& text, const std::string& what) {
  int64_t v = -1;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  check(ec == std::errc() && end == text.data() + text.size() && v >= 0, ErrorCode::InvalidModel,
        what + ": external data " + key + " '" + text + "' is not a non-negative integer");
  return v;
}

// Resolves an external data location inside `base_dir`, refusing absolute paths and paths that
// leave the folder (directly with "..", or through a symbolic link).
fs::path resolve_external(const std::string& base_dir, const std::string& location,
                          const std::string& what) {
  check(!location.empty(), ErrorCode::InvalidModel, what + ": external data has no location");
  fs::path rel(location);
  check(!rel.is_absolute() && !rel.has_root_name() && !rel.has_root_directory(),
        ErrorCode::InvalidModel,
        what + ": external data location '" + location + "' must be relative to the model");
  std::error_code ec;
  fs::path base = fs::weakly_canonical(base_dir.empty() ? fs::path(".") : fs::path(base_dir), ec);
  check(!ec, ErrorCode::InvalidModel, what + ": cannot resolve folder '" + base_dir + "'");
  fs::path full = fs::weakly_canonical(base / rel, ec);
  check(!ec, ErrorCode::InvalidModel,
        what + ": cannot resolve external data location '" + location + "'");
  auto [b, f] = std::mismatch(base.begin(), base.end(), full.begin(), full.end());
  check(b == base.end() && full != base, ErrorCode::InvalidModel,
        what + ": external data location '" + location + "' escapes the model folder " +
            base.string());
  return full;
}

Tensor read_external(const onnx::TensorProto& proto, const std::vector<int64_t>& dims, DType dtype,
                     int64_t nbytes, const std::string& base_dir, const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : proto.external_data()) {
    if (kv.key() == "location") location = kv.value();
    if (kv.key() == "offset") offset = parse_int_field("offset", kv.value(), what);
    if (kv.key() == "length") length = parse_int_field("length", kv.value(), what);
  }
  fs::path file = resolve_external(base_dir, location, what);
  std::ifstream in(file, std::ios::binary);
  check(bool(in), ErrorCode::InvalidModel,
        what + ": cannot open external data file '" + file.string() + "'");
  uint64_t size = stream_size(in);
  check(static_cast<uint64_t>(offset) <= size, ErrorCode::InvalidModel,
        what + ": external data offset " + std::to_string(offset) + " is past the end of '" +
            file.string() + "' (" + std::to_string(size) + " bytes)");
  if (length < 0) length = static_cast<int64_t>(size - offset);
  check(static_cast<uint64_t>(length) <= size - offset, ErrorCode::InvalidModel,
        what + ": external data [" + std::to_string(offset) + ", +" + std::to_string(length) +
            ") runs past the end of '" + file.string() + "' (" + std::to_string(size) + " bytes)");
  check_byte_count(static_cast<uint64_t>(length), nbytes, dims, dtype, what);
  Tensor t(dtype, Shape(dims));
  in.seekg(offset);
  in.read(static_cast<char*>(t.raw()), nbytes);
  check(bool(in), ErrorCode::InvalidModel,
        what + ": cannot read external data from '" + file.string() + "'");
  return t;
}

// Copies a typed repeated field (float_data, int32_data, int64_data) into a new tensor.
template <typename Dst, typename Field>
Tensor from_typed_field(const Field& field, const std::vector<int64_t>& dims, DType dtype,
                        int64_t numel, const char* field_name, const std::string& what) {
  check(field.size() == numel, ErrorCode::InvalidModel,
        what + ": " + field_name + " has " + std::to_string(field.size()) +
            " values, but its shape " + describe_shape(dims, dtype) + " needs " +
            std::to_string(numel));
  Tensor t(dtype, Shape(dims));
  Dst* out = static_cast<Dst*>(t.raw());
  for (int64_t i = 0; i < numel; ++i) out[i] = static_cast<Dst>(field.Get(static_cast<int>(i)));
  return t;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& proto, const std::string& base_dir,
                         const std::string& what) {
  DType dtype = dtype_from_onnx(proto.data_type(), what);
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  for (int64_t d : dims)
    check(d >= 0, ErrorCode::InvalidModel,
          what + ": negative dimension in shape " + Shape(dims).to_string());
  check(!proto.has_segment(), ErrorCode::Unsupported,
        what + ": segmented tensors are not supported");
  // Validate the size before allocating: a hostile file must not make us allocate terabytes.
  int64_t nbytes = checked_nbytes(dims, dtype_size(dtype));
  check(nbytes >= 0, ErrorCode::InvalidModel,
        what + ": shape " + describe_shape(dims, dtype) + " is absurdly large");
  int64_t numel = nbytes / static_cast<int64_t>(dtype_size(dtype));

  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    return read_external(proto, dims, dtype, nbytes, base_dir, what);
  if (proto.has_raw_data()) {
    check_byte_count(proto.raw_data().size(), nbytes, dims, dtype, what);
    Tensor t(dtype, Shape(dims));
    if (nbytes) std::memcpy(t.raw(), proto.raw_data().data(), nbytes);
    return t;
  }
  switch (dtype) {
    case DType::f32:
      return from_typed_field<float>(proto.float_data(), dims, dtype, numel, "float_data", what);
    case DType::i64:
      return from_typed_field<int64_t>(proto.int64_data(), dims, dtype, numel, "int64_data", what);
    case DType::i32:
      return from_typed_field<int32_t>(proto.int32_data(), dims, dtype, numel, "int32_data", what);
    case DType::f16:  // the 16-bit pattern in the low bits of each int32
      return from_typed_field<uint16_t>(proto.int32_data(), dims, dtype, numel, "int32_data", what);
    case DType::i8:
      return from_typed_field<int8_t>(proto.int32_data(), dims, dtype, numel, "int32_data", what);
    case DType::u8:
      return from_typed_field<uint8_t>(proto.int32_data(), dims, dtype, numel, "int32_data", what);
    case DType::boolean:
      return from_typed_field<uint8_t>(proto.int32_data(), dims, dtype, numel, "int32_data", what);
  }
  throw Error(ErrorCode::Internal, what + ": unhandled dtype");
}

void tensor_to_proto(const Tensor& t, const std::string& name, onnx::TensorProto* proto) {
  check(t.defined() && t.device().is_cpu(), ErrorCode::InvalidArgument,
        "tensor '" + name + "': only defined CPU tensors can be written to ONNX");
  check(t.shape().is_static(), ErrorCode::InvalidArgument,
        "tensor '" + name + "': shape " + t.shape().to_string() + " is not static");
  proto->Clear();
  if (!name.empty()) proto->set_name(name);
  proto->set_data_type(dtype_to_onnx(t.dtype()));
  for (int64_t d : t.shape().dims()) proto->add_dims(d);
  proto->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
}

}  // namespace minfer::detail

namespace minfer {

Tensor load_tensor_pb(const std::string& path) {
  std::string bytes = detail::read_file(path, "tensor file");
  onnx::TensorProto proto;
  check(proto.ParseFromString(bytes), ErrorCode::InvalidModel,
        "'" + path + "' is not a valid serialized ONNX TensorProto");
  std::string what = "tensor file '" + path + "'";
  if (!proto.name().empty()) what += " (tensor '" + proto.name() + "')";
  return detail::tensor_from_proto(proto, std::filesystem::path(path).parent_path().string(), what);
}

void save_tensor_pb(const Tensor& t, const std::string& path, const std::string& name) {
  onnx::TensorProto proto;
  detail::tensor_to_proto(t, name, &proto);
  std::string bytes;
  check(proto.SerializeToString(&bytes), ErrorCode::Internal,
        "cannot serialize tensor '" + name + "'");
  detail::write_file(path, bytes, "tensor file");
}

}  // namespace minfer
