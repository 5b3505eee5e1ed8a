// The kernels a plan uses, with the variant each chose (the CPU ISA level), for `inspect`
// and `bench`: "cpu-int8-gemm [avx512vnni] ×21, reference ×1", or {"name": steps, ...}.
#pragma once

#include <string>

#include "minfer/session.h"
#include "tools/json.h"

namespace minfer::cli {

std::string kernels_text(const PlanStats& stats);
Json kernels_json(const PlanStats& stats);

}  // namespace minfer::cli
