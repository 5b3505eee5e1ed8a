// The machine's roofline for the profiler, measured once per process by micro-benchmarks:
// CPU arithmetic by independent FMA chains in registers on every thread, CPU bandwidth by a
// STREAM-style triad over arrays far larger than the caches. (A GPU's: its DeviceBackend.)
#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "minfer/profile.h"
#include "runtime/device_backend.h"

#if defined(__AVX__) && defined(__FMA__)
#include <immintrin.h>
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

namespace minfer {

namespace {

double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

constexpr int kChains = 12;  // independent accumulators: more than FMA latency x issue width
constexpr long kIterations = 1'000'000;  // ~2-5 ms a burst: short enough to run unpreempted

// FLOPs done by one thread's loop; the result goes through `sink` so it is not optimized out.
double fma_loop(float* sink) {
#if defined(__AVX__) && defined(__FMA__)
  __m256 acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = _mm256_set1_ps(float(j) * 0.01f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (long i = 0; i < kIterations; ++i)
    for (int j = 0; j < kChains; ++j) acc[j] = _mm256_fmadd_ps(acc[j], a, b);
  __m256 s = acc[0];
  for (int j = 1; j < kChains; ++j) s = _mm256_add_ps(s, acc[j]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  *sink = lanes[0];
  return double(kIterations) * kChains * 8 * 2;
#else  // portable fallback: the compiler's scalar or auto-vectorized multiply-adds
  float acc[kChains * 8];
  for (int j = 0; j < kChains * 8; ++j) acc[j] = float(j) * 0.01f;
  for (long i = 0; i < kIterations; ++i)
    for (int j = 0; j < kChains * 8; ++j) acc[j] = acc[j] * 0.999999f + 1e-7f;
  float s = 0;
  for (float x : acc) s += x;
  *sink = s;
  return double(kIterations) * kChains * 8 * 2;
#endif
}

double cpu_gflops(int threads) {
  double best = 0;
  std::vector<float> sinks(threads);
  for (int rep = 0; rep < 30; ++rep) {
    double flops = 0;
    const double t0 = now_s();
#pragma omp parallel for num_threads(threads) reduction(+ : flops) schedule(static, 1)
    for (int t = 0; t < threads; ++t) flops += fma_loop(&sinks[t]);
    best = std::max(best, flops / (now_s() - t0) / 1e9);
  }
  return best;
}

double cpu_gbps(int threads) {
  const size_t n = size_t(16) << 20;  // 64 MiB per array, 192 MiB in all
  std::vector<float> a(n), b(n), c(n);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < long(n); ++i)
    b[i] = 1.f, c[i] = 2.f;  // touched by the threads that use them
  double best = 0;
  for (int rep = 0; rep < 10; ++rep) {
    const double t0 = now_s();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (long i = 0; i < long(n); ++i) a[i] = b[i] + 0.5f * c[i];
    best = std::max(best, 3.0 * double(n) * sizeof(float) / (now_s() - t0) / 1e9);
  }
  volatile float keep = a[n / 2];  // the triad's result is used
  (void)keep;
  return best;
}

MachinePeak measure_cpu_peak(int threads) {
  MachinePeak p;
  p.gflops = cpu_gflops(threads);
  p.gbps = cpu_gbps(threads);
#if defined(__AVX__) && defined(__FMA__)
  const char* isa = "AVX2 FMA";
#else
  const char* isa = "scalar multiply-add";
#endif
  p.method = std::string("measured on ") + std::to_string(threads) + " thread(s): " + isa +
             " chains in registers (fp32) and a 3 x 64 MiB triad (read + write bytes), best "
             "of 30 and 10";
  return p;
}

}  // namespace

MachinePeak measure_peak(const Device& device, int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  static std::mutex mutex;
  static std::map<std::pair<std::string, int>, MachinePeak> cache;
  const auto key = std::make_pair(device.to_string(), device.is_cpu() ? threads : 0);
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  MachinePeak p = device.is_cpu() ? measure_cpu_peak(threads)
                                  : device_backend(device).measure_peak(device.index);
  cache[key] = p;
  return p;
}

double roofline_gflops(const MachinePeak& peak, double flops, double bytes) {
  if (bytes <= 0) return peak.gflops;
  return std::min(peak.gflops, flops / bytes * peak.gbps);
}

}  // namespace minfer
