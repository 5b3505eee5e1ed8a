// Reading and writing tensors and weights: .npy files and safetensors.
#pragma once

#include <map>
#include <string>

#include "minfer/tensor.h"

namespace minfer {

// NumPy .npy (format 1.0-3.0, little-endian, C order): f32, f16, i8, u8, i32, i64, bool.
Tensor load_npy(const std::string& path);
void save_npy(const Tensor& t, const std::string& path);

// safetensors (https://github.com/huggingface/safetensors): a JSON header + raw data.
// Rejects truncated files, bad headers, overlapping or out-of-range tensors.
std::map<std::string, Tensor> load_safetensors(const std::string& path);
void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path);

}  // namespace minfer
