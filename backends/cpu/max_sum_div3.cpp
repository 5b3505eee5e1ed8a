#include "backends/cpu/max_sum_div3.h"

#include <algorithm>
#include <type_traits>

#include "ops/max_sum_div3.h"

namespace minfer::cpu {

namespace {

using msd3::Summary;

// Elements per OpenMP task when one row is split across threads.
constexpr int64_t kChunk = int64_t{1} << 16;

// clang-format off
#ifdef _OPENMP
#pragma omp declare reduction(msd3_merge : Summary : msd3::merge(omp_out, omp_in)) \
    initializer(omp_priv = Summary())
#endif
// clang-format on

// One pass over x[0..n). The inner loop keeps one state per SIMD lane, with no dependence
// between lanes, so the compiler turns it into vector min/max/compare (AVX2: vpminud,
// vpmulld, vpblendvb, ...). The lanes then merge, as any two states do.
template <typename T>
Summary reduce_span(const T* x, int64_t n) {
  using U = std::make_unsigned_t<T>;
  constexpr int L = 32 / sizeof(T);  // one 256-bit vector
  constexpr U kNone = msd3::none<U>();
  U a1[L], a2[L], b1[L], b2[L];
  uint64_t lo[L], hi[L];
  for (int l = 0; l < L; ++l) {
    a1[l] = a2[l] = b1[l] = b2[l] = kNone;
    lo[l] = hi[l] = 0;
  }
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    for (int l = 0; l < L; ++l) {
      T v = x[i + l];
      uint64_t p = v > 0 ? uint64_t(v) : 0;
      lo[l] += p;
      // Only int64 input can carry: int32 would need 2^33 elements in one lane.
      if constexpr (sizeof(T) == 8) hi[l] += lo[l] < p;
      U u = msd3::magnitude(v);
      uint32_t r = msd3::mod3(u);
      U xa = r == 2 ? u : kNone;
      U xb = r == 1 ? u : kNone;
      a2[l] = std::min(a2[l], std::max(a1[l], xa));
      a1[l] = std::min(a1[l], xa);
      b2[l] = std::min(b2[l], std::max(b1[l], xb));
      b1[l] = std::min(b1[l], xb);
    }
  }
  Summary s;
  for (int l = 0; l < L; ++l) {
    msd3::State<U> lane;
    lane.pos_lo = lo[l];
    lane.pos_hi = hi[l];
    lane.a1 = a1[l], lane.a2 = a2[l], lane.b1 = b1[l], lane.b2 = b2[l];
    msd3::merge(s, lane);
  }
  for (; i < n; ++i) msd3::add(s, x[i]);
  return s;
}

template <typename T>
int64_t reduce_rows(const T* x, int64_t rows, int64_t n, int64_t* y, int threads) {
  threads = std::max(threads, 1);
  int64_t bad = INT64_MAX;  // the first row that overflows
  if (rows >= 4 * threads || n < 2 * kChunk) {
    // Enough rows to keep every thread busy and balanced (or rows too short to split): a
    // thread takes whole rows.
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) reduction(min : bad) if (rows * n >= kChunk)
#endif
    for (int64_t row = 0; row < rows; ++row)
      if (!msd3::finalize(reduce_span(x + row * n, n), &y[row])) bad = std::min(bad, row);
  } else {
    // Few long rows: threads take chunks of each row, and their states combine.
    const int64_t chunks = (n + kChunk - 1) / kChunk;
    for (int64_t row = 0; row < rows; ++row) {
      const T* r = x + row * n;
      Summary total;
#ifdef _OPENMP
#pragma omp parallel for num_threads(threads) schedule(static) reduction(msd3_merge : total)
#endif
      for (int64_t c = 0; c < chunks; ++c)
        msd3::merge(total, reduce_span(r + c * kChunk, std::min(kChunk, n - c * kChunk)));
      if (!msd3::finalize(total, &y[row])) bad = std::min(bad, row);
    }
  }
  return bad == INT64_MAX ? -1 : bad;
}

}  // namespace

int64_t max_sum_div3(const int32_t* x, int64_t rows, int64_t n, int64_t* y, int threads) {
  return reduce_rows(x, rows, n, y, threads);
}

int64_t max_sum_div3(const int64_t* x, int64_t rows, int64_t n, int64_t* y, int threads) {
  return reduce_rows(x, rows, n, y, threads);
}

}  // namespace minfer::cpu
