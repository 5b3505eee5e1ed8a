// Which instruction-set level the CPU kernels use: detected from CPUID at plan time, or
// capped so that every compiled path can be tested (and benchmarked) on one machine.
//
// The library itself is built for one baseline (CMake's MINFER_ARCH); the hot kernel
// sources in backends/cpu/isa/ are compiled once per level below (cmake/MinferIsa.cmake), each
// in its own namespace, and a kernel picks one of them when it is prepared.
//
//   MINFER_ISA=avx2|avxvnni|avx512|avx512vnni   caps the level for the whole process
//   cpu::set_isa_cap(Isa::avx2)                  caps it from code (kernels prepared later)
//
// A cap naming a level this CPU lacks is an Error (Unsupported), never an illegal instruction.
#pragma once

#include <string>
#include <vector>

namespace minfer::cpu {

// Ordered: a kernel uses the highest level it was compiled for that is <= the active one.
enum class Isa {
  avx2,         // AVX2 + FMA (x86-64-v3)
  avx_vnni,     // AVX2 + AVX-VNNI (vpdpbusd on 256-bit registers: Alder Lake, Zen 5)
  avx512,       // AVX-512 F/BW/DQ/VL (x86-64-v4)
  avx512_vnni,  // AVX-512 + VNNI (Cascade Lake and later, Zen 4 and later)
  amx,          // AVX-512 VNNI + AMX-INT8 tiles (Sapphire Rapids and later): the int8 GEMM
};
inline constexpr Isa kAllIsas[] = {Isa::avx2, Isa::avx_vnni, Isa::avx512, Isa::avx512_vnni,
                                   Isa::amx};

const char* isa_name(Isa isa);  // "avx2", "avxvnni", "avx512", "avx512vnni", "amx"
// True when this CPU (and OS: register state enabled by XCR0) can run the level.
bool isa_supported(Isa isa);
// The levels this CPU supports, lowest first (empty on a CPU without AVX2).
std::vector<Isa> supported_isas();
// The level kernels prepared from now on may use: the cap (set_isa_cap, else MINFER_ISA),
// else the highest supported. Throws Unsupported when the cap names a level this CPU lacks or
// the CPU has none (a kernel's supports() checks has_any_isa() first).
Isa active_isa();
bool has_any_isa();
// Whether the CPU is AMD's (or Hygon's, a Zen): for the few tuning choices where Zen cores
// and Intel's measured the other way round.
bool cpu_is_amd();
// Whether the CPU runs 512-bit operations as two 256-bit halves (AMD's family 19h: Zen 4),
// where some 512-bit broadcasts cost a vector pipe that FMAs need.
bool cpu_splits_512_bit();
// Caps the level; throws Unsupported when the CPU lacks it.
void set_isa_cap(Isa isa);
// Back to MINFER_ISA, or the automatic choice.
void reset_isa_cap();
// Parses a level's name; throws InvalidArgument naming `what` for an unknown one.
Isa parse_isa(const std::string& name, const std::string& what);

}  // namespace minfer::cpu
