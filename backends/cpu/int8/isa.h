// Which int8 micro-kernels the CPU kernels use: chosen at run time from what the CPU
// supports, or forced (tests run every path the machine has; benchmarks compare them).
//
//   MINFER_INT8_ISA=avx2|avxvnni|avx512vnni   forces a path for the whole process
//   cpu::set_int8_isa(Int8Isa::avx2)           forces it from code (kernels prepared later)
#pragma once

#include <vector>

namespace minfer::cpu {

enum class Int8Isa {
  avx2,         // vpmaddwd on int16-widened operands (no vpmaddubsw: it saturates)
  avx_vnni,     // vpdpbusd on 256-bit registers (u8 x s8 with a zero-point correction)
  avx512_vnni,  // vpdpbusd on 512-bit registers
};

const char* int8_isa_name(Int8Isa isa);  // "avx2", "avxvnni", "avx512vnni"
// True when this CPU (and OS) can run the path.
bool int8_isa_supported(Int8Isa isa);
// The paths this CPU supports, slowest first.
std::vector<Int8Isa> supported_int8_isas();
// The path kernels prepared from now on use: the forced one, else the fastest supported.
// Throws Unsupported when MINFER_INT8_ISA names a path this CPU lacks or no path exists.
Int8Isa int8_isa();
// Forces a path; throws Unsupported when the CPU lacks it.
void set_int8_isa(Int8Isa isa);
// Back to automatic choice (MINFER_INT8_ISA still applies).
void reset_int8_isa();

}  // namespace minfer::cpu
