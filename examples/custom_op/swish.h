// An op defined outside minfer: com.example:Swish, Y = X * sigmoid(beta * X) on f32 tensors.
// register_swish registers it with the public API only, so the same code serves a program
// that links it (main.cpp) and a plugin (plugin.cpp).
#pragma once

#include "minfer/registry.h"

namespace example {

inline constexpr const char* kDomain = "com.example";

// The schema (attribute beta, shape inference, reference kernel) and a CPU kernel.
void register_swish(minfer::OpRegistry& registry);

}  // namespace example
