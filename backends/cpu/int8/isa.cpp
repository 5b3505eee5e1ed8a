#include "backends/cpu/int8/isa.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "minfer/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace minfer::cpu {

namespace {
std::atomic<int> g_forced{-1};

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// AVX-VNNI is CPUID leaf 7, subleaf 1, EAX bit 4. Read it directly: clang 16 and older do not
// know the name "avxvnni" in __builtin_cpu_supports.
bool cpuid_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax >> 4) & 1u;
}
#endif

bool cpu_has(Int8Isa isa) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  switch (isa) {
    case Int8Isa::avx2:
      return avx2;
    case Int8Isa::avx_vnni:
      return avx2 && cpuid_avx_vnni();
    case Int8Isa::avx512_vnni:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
  }
#endif
  (void)isa;
  return false;
}

Int8Isa from_env() {
  const char* env = std::getenv("MINFER_INT8_ISA");
  if (!env || !*env) return Int8Isa::avx2;
  for (Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx_vnni, Int8Isa::avx512_vnni})
    if (std::string(env) == int8_isa_name(isa)) {
      check(cpu_has(isa), ErrorCode::Unsupported,
            std::string("MINFER_INT8_ISA=") + env + ": this CPU cannot run that int8 path");
      return isa;
    }
  throw Error(ErrorCode::InvalidArgument,
              std::string("MINFER_INT8_ISA=") + env + ": expected avx2, avxvnni or avx512vnni");
}
}  // namespace

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::avx2:
      return "avx2";
    case Int8Isa::avx_vnni:
      return "avxvnni";
    case Int8Isa::avx512_vnni:
      return "avx512vnni";
  }
  return "?";
}

bool int8_isa_supported(Int8Isa isa) { return cpu_has(isa); }

std::vector<Int8Isa> supported_int8_isas() {
  std::vector<Int8Isa> r;
  for (Int8Isa isa : {Int8Isa::avx2, Int8Isa::avx_vnni, Int8Isa::avx512_vnni})
    if (cpu_has(isa)) r.push_back(isa);
  return r;
}

Int8Isa int8_isa() {
  int forced = g_forced.load();
  if (forced >= 0) return static_cast<Int8Isa>(forced);
  const char* env = std::getenv("MINFER_INT8_ISA");
  if (env && *env) return from_env();
  std::vector<Int8Isa> all = supported_int8_isas();
  check(!all.empty(), ErrorCode::Unsupported, "the int8 CPU kernels need AVX2 and FMA");
  return all.back();
}

void set_int8_isa(Int8Isa isa) {
  check(cpu_has(isa), ErrorCode::Unsupported,
        std::string("set_int8_isa: this CPU cannot run the ") + int8_isa_name(isa) + " int8 path");
  g_forced.store(static_cast<int>(isa));
}

void reset_int8_isa() { g_forced.store(-1); }

}  // namespace minfer::cpu
