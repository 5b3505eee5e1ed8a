#include "backends/cpu/isa.h"

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>

#include "backends/cpu/isa/isa_kernels.h"
#include "minfer/error.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#define MINFER_X86_CPUID 1
#endif

namespace minfer::cpu {

namespace {

std::atomic<int> g_cap{-1};

#ifdef MINFER_X86_CPUID
// AVX-VNNI is CPUID leaf 7, subleaf 1, EAX bit 4. Read it directly: clang 16 and older do not
// know the name "avxvnni" in __builtin_cpu_supports. (Its registers are the AVX ones, whose OS
// support __builtin_cpu_supports("avx2") already checks.)
bool cpuid_avx_vnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax >> 4) & 1u;
}
#endif

// AMX-TILE and AMX-INT8 are CPUID leaf 7, subleaf 0, EDX bits 24 and 25; the OS must enable
// the tile state (XCR0 bits 17 and 18) and, on Linux, grant this process its use
// (arch_prctl ARCH_REQ_XCOMP_PERM for XTILEDATA, once): without that grant the first tile
// instruction faults.
bool cpuid_amx_int8() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!((edx >> 24) & 1u) || !((edx >> 25) & 1u)) return false;
  unsigned lo = 0, hi = 0;
  __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
  static const bool permitted = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtileData = 18;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
  }();
  return permitted;
}

// libgcc's and compiler-rt's feature bits also check that the OS saves the registers (XCR0),
// so an AVX-512 CPU under an OS that disables it reports no AVX-512.
bool read_cpu_has(Isa isa) {
#ifdef MINFER_X86_CPUID
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") &&
                      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                      __builtin_cpu_supports("avx512vl");
  switch (isa) {
    case Isa::avx2:
      return avx2;
    case Isa::avx_vnni:
      return avx2 && cpuid_avx_vnni();
    case Isa::avx512:
      return avx512;
    case Isa::avx512_vnni:
      return avx512 && __builtin_cpu_supports("avx512vnni");
    case Isa::amx:
      return avx512 && __builtin_cpu_supports("avx512vnni") && cpuid_amx_int8();
  }
#endif
  (void)isa;
  return false;
}

// The CPU's answers, read once: in a virtual machine each CPUID instruction traps to the
// hypervisor (8 us a call measured in a KVM guest), and kernels ask at every run.
bool cpu_has(Isa isa) {
  static const auto has = [] {
    std::array<bool, std::size(kAllIsas)> r{};
    for (size_t i = 0; i < r.size(); ++i) r[i] = read_cpu_has(kAllIsas[i]);
    return r;
  }();
  for (size_t i = 0; i < has.size(); ++i)
    if (kAllIsas[i] == isa) return has[i];
  return false;
}

std::string supported_list() {
  std::string s;
  for (Isa isa : supported_isas()) s += std::string(s.empty() ? "" : ", ") + isa_name(isa);
  return s.empty() ? "none" : s;
}

Isa checked(Isa isa, const std::string& what) {
  check(cpu_has(isa), ErrorCode::Unsupported,
        what + ": this CPU cannot run " + isa_name(isa) + " kernels (it supports: " +
            supported_list() + ")");
  return isa;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::avx2:
      return "avx2";
    case Isa::avx_vnni:
      return "avxvnni";
    case Isa::avx512:
      return "avx512";
    case Isa::avx512_vnni:
      return "avx512vnni";
    case Isa::amx:
      return "amx";
  }
  return "?";
}

Isa parse_isa(const std::string& name, const std::string& what) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  throw Error(ErrorCode::InvalidArgument,
              what + ": unknown ISA level '" + name +
                  "' (expected avx2, avxvnni, avx512, avx512vnni or amx)");
}

bool isa_supported(Isa isa) { return cpu_has(isa); }

std::vector<Isa> supported_isas() {
  std::vector<Isa> r;
  for (Isa isa : kAllIsas)
    if (cpu_has(isa)) r.push_back(isa);
  return r;
}

bool has_any_isa() { return cpu_has(Isa::avx2); }

bool cpu_is_amd() {
#ifdef MINFER_X86_CPUID
  static const bool amd = [] {
    unsigned eax = 0, vendor[3] = {0, 0, 0};
    if (!__get_cpuid(0, &eax, &vendor[0], &vendor[2], &vendor[1])) return false;
    char name[13] = {};
    std::memcpy(name, vendor, 12);
    return std::string(name) == "AuthenticAMD" || std::string(name) == "HygonGenuine";
  }();
  return amd;
#else
  return false;
#endif
}

bool cpu_splits_512_bit() {
#ifdef MINFER_X86_CPUID
  static const bool split = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (!cpu_is_amd() || !__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const unsigned base = (eax >> 8) & 0xf, extended = (eax >> 20) & 0xff;
    return base + (base == 0xf ? extended : 0) == 0x19;  // Zen 3 and 4; Zen 3 has no AVX-512
  }();
  return split;
#else
  return false;
#endif
}

Isa active_isa() {
  const int cap = g_cap.load();
  if (cap >= 0) return static_cast<Isa>(cap);
  const char* env = std::getenv("MINFER_ISA");
  if (env && *env) {
    const std::string what = std::string("MINFER_ISA=") + env;
    return checked(parse_isa(env, what), what);
  }
  for (size_t i = std::size(kAllIsas); i-- > 0;)
    if (cpu_has(kAllIsas[i])) return kAllIsas[i];
  throw Error(ErrorCode::Unsupported,
              "the optimized CPU kernels need AVX2 and FMA, which this CPU lacks");
}

void set_isa_cap(Isa isa) { g_cap.store(static_cast<int>(checked(isa, "set_isa_cap"))); }

void reset_isa_cap() { g_cap.store(-1); }

const LevelKernels* level_kernels(Isa isa) {
  static constexpr const LevelKernels* kCompiled[] = {
#ifdef MINFER_HAVE_ISA_avx2
      &isa_avx2::kLevelKernels,
#endif
#ifdef MINFER_HAVE_ISA_avxvnni
      &isa_avxvnni::kLevelKernels,
#endif
#ifdef MINFER_HAVE_ISA_avx512
      &isa_avx512::kLevelKernels,
#endif
#ifdef MINFER_HAVE_ISA_avx512vnni
      &isa_avx512vnni::kLevelKernels,
#endif
#ifdef MINFER_HAVE_ISA_amx
      &isa_amx::kLevelKernels,
#endif
      nullptr};
  const LevelKernels* best = nullptr;
  for (const LevelKernels* k : kCompiled)
    if (k && k->isa <= isa && isa_supported(k->isa)) best = k;
  return best;
}

}  // namespace minfer::cpu
