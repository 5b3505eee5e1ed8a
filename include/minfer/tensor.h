// DType, Shape, Device, QuantParams and Tensor: the data that flows through a graph.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "minfer/error.h"

namespace minfer {

enum class DType : uint8_t { f32, f16, i8, u8, i32, i64, boolean };

size_t dtype_size(DType t);
const char* dtype_name(DType t);  // "f32", "i8", ...
// Maps the C++ element type to its DType: dtype_of<float>() == DType::f32.
template <typename T>
constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

// Dimensions of a tensor. A negative dimension is symbolic (unknown until run time), e.g. the
// batch dimension of a model input; `symbols` names such dimensions ("N") where known.
class Shape {
 public:
  static constexpr int64_t kDynamic = -1;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(std::vector<int64_t> dims) : dims_(std::move(dims)) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  std::vector<int64_t>& dims() { return dims_; }
  bool is_static() const;
  // Number of elements; throws InvalidArgument for a symbolic shape.
  int64_t numel() const;
  std::string to_string() const;  // "[N,3,224,224]"
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

  std::vector<std::string> symbols;  // parallel to dims where a symbolic dim has a name

 private:
  std::vector<int64_t> dims_;
};

struct Device {
  enum class Type : uint8_t { CPU, CUDA };
  Type type = Type::CPU;
  int index = 0;

  static Device cpu() { return {}; }
  static Device cuda(int index = 0) { return {Type::CUDA, index}; }
  bool is_cpu() const { return type == Type::CPU; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string to_string() const;  // "cpu", "cuda:0"
};

// real = scale * (q - zero_point). Per tensor when axis < 0 (one scale), else per channel on
// `axis` (one scale and zero point per channel).
struct QuantParams {
  std::vector<float> scale;
  std::vector<int32_t> zero_point;
  int axis = -1;
};

// A typed n-d array on a device. Copies share the buffer (like shared_ptr); use clone() for
// a deep copy. A tensor may also view memory it does not own (Tensor::view).
class Tensor {
 public:
  Tensor() = default;
  // Allocates a zero-filled tensor. Throws for symbolic shapes or absurd sizes.
  Tensor(DType dtype, Shape shape, Device device = Device::cpu());
  // Non-owning view of existing memory; the caller keeps it alive.
  static Tensor view(void* data, DType dtype, Shape shape, Device device = Device::cpu());
  template <typename T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape);
  template <typename T>
  static Tensor scalar(T value) { return from_vector<T>({value}, Shape{}); }

  bool defined() const { return dtype_set_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  size_t rank() const { return shape_.rank(); }
  int64_t dim(size_t i) const { return shape_[i]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  const Device& device() const { return device_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    check_type(dtype_of<T>());
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    check_type(dtype_of<T>());
    return static_cast<const T*>(data_);
  }
  template <typename T>
  std::vector<T> to_vector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + numel_);
  }

  Tensor clone() const;                    // deep copy on the CPU
  Tensor reshaped(Shape shape) const;      // same buffer, new shape (same numel)
  std::string to_string(size_t max_elements = 16) const;

  std::optional<QuantParams> quant;  // set on quantized tensors

 private:
  // Allocates without zero-filling, for a buffer about to be overwritten whole (clone).
  struct Uninitialized {};
  Tensor(DType dtype, Shape shape, Uninitialized);
  void check_type(DType t) const;
  friend struct TensorAccess;  // runtime-internal: tensors around lent buffers (output_buffers)
  std::shared_ptr<void> storage_;  // owns the memory unless this is a view
  void* data_ = nullptr;
  DType dtype_ = DType::f32;
  bool dtype_set_ = false;
  Shape shape_;
  int64_t numel_ = 0;
  Device device_;
};

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, Shape shape) {
  Tensor t(dtype_of<T>(), std::move(shape));
  check(static_cast<int64_t>(values.size()) == t.numel(), ErrorCode::InvalidArgument,
        "Tensor::from_vector: " + std::to_string(values.size()) + " values for shape " +
            t.shape().to_string());
  T* p = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) p[i] = values[i];
  return t;
}

}  // namespace minfer
