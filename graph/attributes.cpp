#include "minfer/graph.h"

namespace minfer {

namespace {
template <typename T>
const T* get_as(const std::map<std::string, Attribute>& m, const std::string& name,
                const char* type_name) {
  auto it = m.find(name);
  if (it == m.end()) return nullptr;
  const T* v = std::get_if<T>(&it->second);
  if (!v)
    throw Error(ErrorCode::InvalidModel,
                "attribute '" + name + "' has the wrong type (expected " + type_name + ")");
  return v;
}
}  // namespace

int64_t Attributes::get_int(const std::string& name, int64_t def) const {
  const int64_t* v = get_as<int64_t>(map_, name, "int");
  return v ? *v : def;
}

float Attributes::get_float(const std::string& name, float def) const {
  auto it = map_.find(name);
  if (it != map_.end())
    if (const int64_t* i = std::get_if<int64_t>(&it->second)) return static_cast<float>(*i);
  const float* v = get_as<float>(map_, name, "float");
  return v ? *v : def;
}

std::string Attributes::get_string(const std::string& name, const std::string& def) const {
  const std::string* v = get_as<std::string>(map_, name, "string");
  return v ? *v : def;
}

std::vector<int64_t> Attributes::get_ints(const std::string& name,
                                          std::vector<int64_t> def) const {
  const auto* v = get_as<std::vector<int64_t>>(map_, name, "ints");
  return v ? *v : def;
}

std::vector<float> Attributes::get_floats(const std::string& name,
                                          std::vector<float> def) const {
  const auto* v = get_as<std::vector<float>>(map_, name, "floats");
  return v ? *v : def;
}

const Tensor* Attributes::get_tensor(const std::string& name) const {
  return get_as<Tensor>(map_, name, "tensor");
}

int64_t Attributes::require_int(const std::string& name) const {
  const int64_t* v = get_as<int64_t>(map_, name, "int");
  if (!v) throw Error(ErrorCode::InvalidModel, "required attribute '" + name + "' is missing");
  return *v;
}

}  // namespace minfer
