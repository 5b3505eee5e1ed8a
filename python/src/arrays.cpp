// Arrays in and out without copies: DLPack/buffer-protocol arrays become Tensor views, and
// output Tensors become NumPy arrays that own them.
#include <vector>

#include "python/src/module.h"

namespace minfer::py {

namespace {

DType dtype_from(const nb::dlpack::dtype& d, const std::string& name) {
  using Code = nb::dlpack::dtype_code;
  const auto code = static_cast<Code>(d.code);
  if (d.lanes == 1) {
    if (code == Code::Float && d.bits == 32) return DType::f32;
    if (code == Code::Float && d.bits == 16) return DType::f16;
    if (code == Code::Int && d.bits == 8) return DType::i8;
    if (code == Code::UInt && d.bits == 8) return DType::u8;
    if (code == Code::Int && d.bits == 32) return DType::i32;
    if (code == Code::Int && d.bits == 64) return DType::i64;
    if (code == Code::Bool && d.bits == 8) return DType::boolean;
  }
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  const std::string kind = d.code < 7 ? codes[d.code] : "code " + std::to_string(d.code);
  throw Error(ErrorCode::InvalidArgument,
              "input '" + name + "' has element type " + kind + std::to_string(d.bits) +
                  ", which minfer does not take (float32, float16, int8, uint8, int32, int64, "
                  "bool); convert it, e.g. x.astype(numpy.float32)");
}

nb::dlpack::dtype dlpack_of(DType t) {
  switch (t) {
    case DType::f32:
      return nb::dtype<float>();
    case DType::f16:
      return {static_cast<uint8_t>(nb::dlpack::dtype_code::Float), 16, 1};
    case DType::i8:
      return nb::dtype<int8_t>();
    case DType::u8:
      return nb::dtype<uint8_t>();
    case DType::i32:
      return nb::dtype<int32_t>();
    case DType::i64:
      return nb::dtype<int64_t>();
    case DType::boolean:
      return nb::dtype<bool>();
  }
  throw Error(ErrorCode::Internal, "to_numpy: unknown dtype");
}

}  // namespace

namespace {
// `what`: "input" or "output", for messages.
template <typename Array>
Tensor view_of(const Array& a, const char* what, const std::string& name) {
  const DType dtype = dtype_from(a.dtype(), name);
  std::vector<int64_t> dims(a.ndim());
  for (size_t i = 0; i < a.ndim(); ++i) dims[i] = static_cast<int64_t>(a.shape(i));
  // Strides are in elements; a dimension of extent 1 may have any stride, and an empty array
  // any strides at all.
  int64_t expected = 1;
  const bool empty = a.size() == 0;
  for (size_t i = a.ndim(); !empty && i-- > 0;) {
    if (dims[i] != 1 && a.stride(i) != expected)
      throw Error(ErrorCode::InvalidArgument,
                  std::string(what) + " '" + name +
                      "' is not C-contiguous (a transposed or sliced view); pass "
                      "numpy.ascontiguousarray(x), or x.contiguous() for a PyTorch tensor");
    expected *= dims[i];
  }
  Device device;
  if (a.device_type() == nb::device::cpu::value) {
    device = Device::cpu();
  } else if (a.device_type() == nb::device::cuda::value) {
    device = Device::cuda(a.device_id());
  } else {
    throw Error(ErrorCode::InvalidArgument,
                std::string(what) + " '" + name + "' lives on DLPack device type " +
                    std::to_string(a.device_type()) + "; minfer takes CPU or CUDA memory");
  }
  return Tensor::view(const_cast<void*>(a.data()), dtype, Shape(std::move(dims)), device);
}
}  // namespace

Tensor tensor_view(const InArray& a, const std::string& name) { return view_of(a, "input", name); }
Tensor tensor_view(const OutArray& a, const std::string& name) {
  return view_of(a, "output", name);
}

nb::object to_numpy(Tensor t) {
  check(t.device().is_cpu(), ErrorCode::Internal, "to_numpy: a device tensor");
  auto* owned = new Tensor(std::move(t));
  nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<Tensor*>(p); });
  std::vector<size_t> shape(owned->rank());
  for (size_t i = 0; i < shape.size(); ++i) shape[i] = static_cast<size_t>(owned->dim(i));
  nb::ndarray<nb::numpy> array(owned->raw(), shape.size(), shape.data(), owner, nullptr,
                               dlpack_of(owned->dtype()), nb::device::cpu::value);
  return nb::cast(array);
}

}  // namespace minfer::py
