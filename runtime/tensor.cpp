#include "minfer/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <sstream>

namespace minfer {

namespace {
// Refuse single tensors above this size: a corrupt or hostile model must not make us try to
// allocate terabytes (or overflow a size computation).
constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 36;  // 64 GiB
}  // namespace

size_t dtype_size(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::i8: return 1;
    case DType::u8: return 1;
    case DType::i32: return 4;
    case DType::i64: return 8;
    case DType::boolean: return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
    case DType::i32: return "i32";
    case DType::i64: return "i64";
    case DType::boolean: return "bool";
  }
  return "?";
}

bool Shape::is_static() const {
  for (int64_t d : dims_)
    if (d < 0) return false;
  return true;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    check(d >= 0, ErrorCode::InvalidArgument, "shape " + to_string() + " is not static");
    check(d == 0 || n <= INT64_MAX / d, ErrorCode::OutOfMemory,
          "shape " + to_string() + " has too many elements");
    n *= d;
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    if (dims_[i] >= 0)
      s += std::to_string(dims_[i]);
    else
      s += (i < symbols.size() && !symbols[i].empty()) ? symbols[i] : "?";
  }
  return s + "]";
}

std::string Device::to_string() const {
  return type == Type::CPU ? "cpu" : "cuda:" + std::to_string(index);
}

Tensor::Tensor(DType dtype, Shape shape, Device device) {
  check(device.is_cpu(), ErrorCode::InvalidArgument,
        "Tensor: only CPU tensors can be allocated directly (device memory belongs to a session)");
  *this = Tensor(dtype, std::move(shape), Uninitialized{});
  std::memset(data_, 0, (nbytes() + 63) / 64 * 64);
}

Tensor::Tensor(DType dtype, Shape shape, Uninitialized)
    : dtype_(dtype), dtype_set_(true), shape_(std::move(shape)) {
  numel_ = shape_.numel();
  uint64_t bytes = static_cast<uint64_t>(numel_) * dtype_size(dtype);
  check(numel_ == 0 || bytes / numel_ == dtype_size(dtype), ErrorCode::OutOfMemory,
        "tensor of shape " + shape_.to_string() + " is too large");
  check(bytes <= kMaxTensorBytes, ErrorCode::OutOfMemory,
        "tensor of shape " + shape_.to_string() + " " + dtype_name(dtype) + " needs " +
            std::to_string(bytes) + " bytes, above the limit of " +
            std::to_string(kMaxTensorBytes));
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  // operator new rather than aligned_alloc: one allocator for all of minfer's host memory,
  // which a test can make fail.
  void* p = ::operator new(alloc, std::align_val_t(64), std::nothrow);
  if (!p) throw Error(ErrorCode::OutOfMemory, "cannot allocate " + std::to_string(bytes) + " bytes");
  try {
    storage_ = std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t(64)); });
  } catch (const std::bad_alloc&) {  // the deleter has freed p
    throw Error(ErrorCode::OutOfMemory, "cannot allocate a tensor's bookkeeping");
  }
  data_ = p;
}

Tensor Tensor::view(void* data, DType dtype, Shape shape, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  t.shape_ = std::move(shape);
  t.numel_ = t.shape_.numel();
  t.device_ = device;
  t.data_ = data;
  return t;
}

void Tensor::check_type(DType t) const {
  if (t != dtype_)
    throw Error(ErrorCode::InvalidArgument, std::string("tensor holds ") + dtype_name(dtype_) +
                                                ", accessed as " + dtype_name(t));
}

Tensor Tensor::clone() const {
  check(device_.is_cpu(), ErrorCode::InvalidArgument, "Tensor::clone: not a CPU tensor");
  Tensor t(dtype_, shape_, Uninitialized{});
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  t.quant = quant;
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  int64_t n = shape.numel();
  check(n == numel_, ErrorCode::InvalidArgument,
        "cannot reshape " + shape_.to_string() + " to " + shape.to_string());
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::to_string(size_t max_elements) const {
  std::ostringstream os;
  os << dtype_name(dtype_) << shape_.to_string() << " {";
  size_t n = std::min<size_t>(numel_, max_elements);
  for (size_t i = 0; i < n && device_.is_cpu(); ++i) {
    if (i) os << ", ";
    switch (dtype_) {
      case DType::f32: os << static_cast<const float*>(data_)[i]; break;
      case DType::i8: os << int(static_cast<const int8_t*>(data_)[i]); break;
      case DType::u8: os << int(static_cast<const uint8_t*>(data_)[i]); break;
      case DType::i32: os << static_cast<const int32_t*>(data_)[i]; break;
      case DType::i64: os << static_cast<const int64_t*>(data_)[i]; break;
      case DType::boolean: os << int(static_cast<const uint8_t*>(data_)[i]); break;
      case DType::f16: os << "h"; break;
    }
  }
  if (static_cast<size_t>(numel_) > n) os << ", ...";
  os << "}";
  return os.str();
}

}  // namespace minfer
