// Pinning the shape of a model input: gives symbolic dims ("N", "height") concrete values, as
// `minfer run --shape NAME=1x3x224x224` does, before a Session is made from the graph.
#pragma once

#include <string>
#include <utility>

#include "minfer/graph.h"

namespace minfer {

// Sets the shape of graph input `name` ("" = the model's only input). Every dim the model
// fixes must keep its value; symbolic ones take the given value. Throws InvalidArgument naming
// the input (and listing the inputs when there is none of that name). Shapes downstream are
// recomputed by the next Graph::infer_shapes (a Session's constructor runs it).
void set_input_shape(Graph& g, const std::string& name, const Shape& shape);

// Parses "NAME=1x3x224x224" (or "1x3x224x224": name "") into a name and a static shape; "" or
// "NAME=" is a scalar. Throws InvalidArgument quoting `spec` when it is malformed.
std::pair<std::string, Shape> parse_input_shape(const std::string& spec);

}  // namespace minfer
