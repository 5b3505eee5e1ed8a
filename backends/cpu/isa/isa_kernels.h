// The tables of hot kernels that backends/cpu/isa/*.cpp define once per ISA level
// (cmake/MinferIsa.cmake compiles each of those sources once per level, in the namespace
// minfer::cpu::isa_<level>). Only declarations and plain structs here: this header is
// included by code built for every level, so it must hold no code the linker could merge
// across them.
#pragma once

#include <cstdint>

namespace minfer::cpu {
enum class Isa;  // backends/cpu/isa.h (left out here: it pulls in <string>)
}

namespace minfer::cpu::q8 {

// C[r * nr + j] = init[j] + sum over k-steps of the packed row a + r * a_stride (kq lanes of
// 4 bytes) times the packed weight block b (kq lanes x nr channels x 4 bytes), r < rows <= mr.
using MicroKernel = void (*)(const uint8_t* a, int64_t a_stride, const uint8_t* b, int64_t kq,
                             int rows, const int32_t* init, int32_t* c);
// Packs one row of k int8 activations into kq lanes of 4 bytes (zero-padded).
using PackRow = void (*)(const int8_t* x, int64_t k, int64_t kq, uint8_t* out);

// The int8 GEMM core of one ISA level (backends/cpu/isa/qgemm_micro.cpp).
struct MicroKernels {
  Isa isa;
  int mr;             // rows (output pixels) per micro-tile
  int nr;             // output channels per micro-tile and per packed weight block
  int kstep;          // k values per 32-bit lane: 2 (int16 pairs, vpmaddwd) or 4 (vpdpbusd)
  int32_t a_offset;   // added to every packed activation: 0 (int16) or 128 (x ^ 0x80, u8)
  MicroKernel micro;
  PackRow pack_a_row;
};

}  // namespace minfer::cpu::q8

// One table per compiled level (defined only where the compiler can target it).
namespace minfer::cpu::isa_avx2 {
extern const q8::MicroKernels kInt8MicroKernels;
}
namespace minfer::cpu::isa_avxvnni {
extern const q8::MicroKernels kInt8MicroKernels;
}
namespace minfer::cpu::isa_avx512 {
extern const q8::MicroKernels kInt8MicroKernels;
}
namespace minfer::cpu::isa_avx512vnni {
extern const q8::MicroKernels kInt8MicroKernels;
}
