// MaxSumDiv3 (domain com.minfer): for each row of an integer tensor [..., N], the largest sum of
// a subset of the row's elements that is divisible by 3 (the empty subset counts, so >= 0).
//
// This header also holds the reduction state that the CPU and CUDA kernels share (host and
// device code). The classic solution keeps best[r], the best subset sum with residue r, per
// prefix. The kernels keep an equivalent state that costs a few min/max per element (32-bit
// ones for int32 input) instead of three 64-bit candidate sums and a data-dependent shuffle:
//   P = the sum of the positive elements (the best subset ignoring divisibility), and the two
//   smallest |v| among elements with |v| % 3 == 2 ("A") and with |v| % 3 == 1 ("B").
// Dropping a positive element or adding a negative one lowers the sum by |v|, which moves its
// residue by +1 for an A element and by +2 for a B element. So best[r] = P - (cheapest way to
// move P's residue to r): 0; one A or two B's (+1); one B or two A's (+2). Any other choice
// contains one of these and costs more. Two states combine by adding P and merging the
// two-smallest lists, which is associative and commutative.
#pragma once

#include <cstdint>
#include <string>

#if defined(__CUDACC__)
#define MINFER_HD __host__ __device__ __forceinline__
#else
#define MINFER_HD inline
#endif

namespace minfer {

class OpRegistry;

// Registers the op with `registry` through the public API, exactly as a user registers their
// own op: the schema with its reference kernel, the CPU kernel and, in CUDA builds, the CUDA
// kernel. Called once for the global registry (ops/registry.cpp).
void register_max_sum_div3(OpRegistry& registry);

// The error every implementation raises for a row whose positive values sum past INT64_MAX
// (Error InvalidArgument naming the node, e.g. "com.minfer:MaxSumDiv3 'm'", and the row).
[[noreturn]] void throw_max_sum_div3_overflow(const std::string& node, int64_t row);

namespace cuda {
// Registers the CUDA kernel (backends/cuda/max_sum_div3_kernel.cpp; CUDA builds only).
void register_max_sum_div3_kernel(OpRegistry& registry);
}  // namespace cuda

namespace msd3 {

// "No such element" in a two-smallest list; above every |v| of an int32 or int64.
template <typename U>
MINFER_HD constexpr U none() {
  return ~U(0);
}

template <typename U>
MINFER_HD U umin(U a, U b) {
  return a < b ? a : b;
}
template <typename U>
MINFER_HD U umax(U a, U b) {
  return a < b ? b : a;
}

// Inserts x into the sorted pair m1 <= m2 of the two smallest values seen.
template <typename U>
MINFER_HD void insert2(U& m1, U& m2, U x) {
  m2 = umin(m2, umax(m1, x));
  m1 = umin(m1, x);
}

// Merges the sorted pair (n1, n2) into (m1, m2).
template <typename U>
MINFER_HD void merge2(U& m1, U& m2, U n1, U n2) {
  m2 = umin(umax(m1, n1), umin(m2, n2));
  m1 = umin(m1, n1);
}

// u % 3 for u <= 2^31 (any |v| of an int32) with one multiply and no division, which
// vectorizes. With k = 1/3 mod 2^32, u * k = u / 3 + (u % 3) * k (mod 2^32); for u <= 2^31 the
// residues land in disjoint ranges, and adding 0x55555555 moves them to: [0x55555555,
// 0x7FFFFFFF] for 0, [0, 0x2AAAAAAA] for 1, and the negative int32 values for 2.
MINFER_HD uint32_t mod3(uint32_t u) {
  uint32_t t = u * 0xAAAAAAABu + 0x55555555u;
  return int32_t(t) < 0 ? 2u : (t <= 0x2AAAAAAAu ? 1u : 0u);
}
// u % 3 for any 64-bit u, with 32-bit arithmetic only (2^32 = 1 mod 3).
MINFER_HD uint32_t mod3(uint64_t u) {
  uint32_t t = uint32_t(u >> 32) % 3u + uint32_t(u) % 3u;
  return t >= 3u ? t - 3u : t;
}

// |v| as an unsigned value (exact for the most negative value too).
MINFER_HD uint32_t magnitude(int32_t v) { return v < 0 ? 0u - uint32_t(v) : uint32_t(v); }
MINFER_HD uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t(0) - uint64_t(v) : uint64_t(v); }

// The state of a reduction over any number of elements; U is the magnitude type (uint32_t for
// int32 input, uint64_t for int64 and for combined states).
template <typename U>
struct State {
  uint64_t pos_lo = 0, pos_hi = 0;   // P as a 128-bit number, hi:lo
  U a1 = none<U>(), a2 = none<U>();  // two smallest |v| with |v| % 3 == 2
  U b1 = none<U>(), b2 = none<U>();  // two smallest |v| with |v| % 3 == 1
};
using Summary = State<uint64_t>;

// Adds `p` (a sum of positive elements) to P.
template <typename U>
MINFER_HD void add_positive(State<U>& s, uint64_t p) {
  s.pos_lo += p;
  s.pos_hi += s.pos_lo < p;
}

// Adds |v| to the two-smallest list of its class (nothing for multiples of 3).
template <typename U>
MINFER_HD void add_magnitude(State<U>& s, U u) {
  uint32_t r = mod3(u);
  insert2(s.a1, s.a2, r == 2 ? u : none<U>());
  insert2(s.b1, s.b2, r == 1 ? u : none<U>());
}

// Adds one element.
template <typename U, typename T>
MINFER_HD void add(State<U>& s, T v) {
  add_positive(s, v > 0 ? uint64_t(v) : 0);
  add_magnitude(s, U(magnitude(v)));
}

template <typename U, typename V>
MINFER_HD void merge(State<U>& s, const State<V>& o) {
  uint64_t lo = s.pos_lo + o.pos_lo;
  s.pos_hi += o.pos_hi + (lo < s.pos_lo);
  s.pos_lo = lo;
  auto n = [](V x) { return x == none<V>() ? none<U>() : U(x); };
  merge2(s.a1, s.a2, n(o.a1), n(o.a2));
  merge2(s.b1, s.b2, n(o.b1), n(o.b2));
}

MINFER_HD uint64_t saturating_add(uint64_t a, uint64_t b) {
  uint64_t s = a + b;
  return s < a ? none<uint64_t>() : s;
}

// The answer, best[0]. Returns false when P exceeds INT64_MAX: the op's documented overflow
// error (the answer is at most P, so when P fits, every step below does too).
template <typename U>
MINFER_HD bool finalize(const State<U>& s, int64_t* answer) {
  if (s.pos_hi != 0 || s.pos_lo > uint64_t(INT64_MAX)) return false;
  auto w = [](U x) { return x == none<U>() ? none<uint64_t>() : uint64_t(x); };
  uint64_t a1 = w(s.a1), a2 = w(s.a2), b1 = w(s.b1), b2 = w(s.b2);
  uint64_t p = s.pos_lo, cost = 0;
  if (p % 3 == 1) cost = umin(b1, saturating_add(a1, a2));
  if (p % 3 == 2) cost = umin(a1, saturating_add(b1, b2));
  // cost <= p: dropping every positive element is one of the ways, and costs p.
  *answer = int64_t(p - cost);
  return true;
}

}  // namespace msd3
}  // namespace minfer
