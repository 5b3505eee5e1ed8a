#include "runtime/input_shape.h"

#include <charconv>

namespace minfer {

void set_input_shape(Graph& g, const std::string& name, const Shape& shape) {
  std::vector<Value*> inputs;
  for (Value* v : g.inputs())
    if (!v->is_constant()) inputs.push_back(v);
  Value* in = nullptr;
  if (name.empty()) {
    check(inputs.size() == 1, ErrorCode::InvalidArgument,
          "the model has " + std::to_string(inputs.size()) +
              " inputs: name the one whose shape to set (NAME=DIMS)");
    in = inputs[0];
  } else {
    for (Value* v : inputs)
      if (v->name == name) in = v;
    if (!in) {
      std::string list;
      for (const Value* v : inputs) list += (list.empty() ? "" : ", ") + v->name;
      throw Error(ErrorCode::InvalidArgument,
                  "the model has no input named '" + name + "' (inputs: " + list + ")");
    }
  }
  const std::string what = "input '" + in->name + "' " + in->shape.to_string();
  for (int64_t d : shape.dims())
    check(d >= 0, ErrorCode::InvalidArgument,
          what + ": the new shape " + shape.to_string() + " must be static");
  if (in->shape_known) {  // a model without a shape for the input leaves even the rank open
    check(shape.rank() == in->shape.rank(), ErrorCode::InvalidArgument,
          what + " has rank " + std::to_string(in->shape.rank()) + ", the new shape " +
              shape.to_string() + " has rank " + std::to_string(shape.rank()));
    for (size_t i = 0; i < shape.rank(); ++i)
      check(in->shape[i] < 0 || in->shape[i] == shape[i], ErrorCode::InvalidArgument,
            what + ": dim " + std::to_string(i) + " is fixed at " + std::to_string(in->shape[i]) +
                " by the model, the new shape " + shape.to_string() + " has " +
                std::to_string(shape[i]));
  }
  in->shape = Shape(shape.dims());  // no symbols: every dim is now a number
  in->shape_known = true;
}

std::pair<std::string, Shape> parse_input_shape(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  std::string name = eq == std::string::npos ? "" : spec.substr(0, eq);
  const std::string dims = eq == std::string::npos ? spec : spec.substr(eq + 1);
  check(eq == std::string::npos || !name.empty(), ErrorCode::InvalidArgument,
        "shape '" + spec + "': the input name before '=' is empty");
  Shape shape;
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t end = dims.find_first_of("x,", pos);
    if (end == std::string::npos) end = dims.size();
    int64_t d = -1;
    auto [ptr, ec] = std::from_chars(dims.data() + pos, dims.data() + end, d);
    check(ec == std::errc() && ptr == dims.data() + end && d >= 0 && end > pos,
          ErrorCode::InvalidArgument,
          "shape '" + spec + "': expected NAME=DIMS with DIMS like 1x3x224x224, got '" +
              dims.substr(pos, end - pos) + "' as a dim");
    shape.dims().push_back(d);
    pos = end + 1;
    check(end == dims.size() || pos < dims.size(), ErrorCode::InvalidArgument,
          "shape '" + spec + "': a dim is missing after the last separator");
  }
  return {std::move(name), std::move(shape)};
}

}  // namespace minfer
