#include "backends/cpu/winograd.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>

#include "backends/cpu/env_switch.h"
#include "backends/cpu/parallel.h"

namespace minfer::cpu {

namespace {

constexpr int kLanes = 8;       // tiles transformed at once: one AVX vector per operation
constexpr int kTile = 4;        // output tile side
constexpr int kIn = 6;          // input tile side (kTile + 3 - 1)
constexpr int kPoints = 36;     // kIn * kIn: the number of GEMMs
constexpr int64_t kAlignCols = 24;  // rows of Eigen's fp32 AVX micro-kernel (packed_gemm.h)
// The transformed inputs and products of a block (36 x (C + M) x tiles floats) should stay
// in the L2 cache between the transform, the GEMMs and the inverse transform.
constexpr int64_t kBlockBytes = 512 * 1024;
constexpr int64_t kAvx2DirectMinChannels = 256;  // see prepare()

// The floats between two transformed matrices of `floats` floats: whole cache lines, plus one
// where that is an even number of them (see WinogradConv::v_point_).
int64_t point_stride(int64_t floats) {
  const int64_t lines = (floats + 15) / 16;
  return (lines % 2 == 0 ? lines + 1 : lines) * 16;
}

// G, the weight transform of F(4x4, 3x3) at the points 0, 1, -1, 2, -2 and infinity.
constexpr double kG[kIn][3] = {{1.0 / 4, 0, 0},
                               {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                               {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                               {1.0 / 24, 1.0 / 12, 1.0 / 6},
                               {1.0 / 24, -1.0 / 12, 1.0 / 6},
                               {0, 0, 1}};

// v = B^T d along one axis, for kLanes tiles at once: six rows of lanes, ds (vs) floats apart.
// The loops over lanes are what the compiler vectorizes.
inline void input_1d(const float* d, int64_t ds, float* v, int64_t vs) {
  for (int l = 0; l < kLanes; ++l) {
    const float d0 = d[l], d1 = d[ds + l], d2 = d[2 * ds + l], d3 = d[3 * ds + l],
                d4 = d[4 * ds + l], d5 = d[5 * ds + l];
    v[l] = 4.f * d0 - 5.f * d2 + d4;
    v[vs + l] = -4.f * (d1 + d2) + d3 + d4;
    v[2 * vs + l] = 4.f * (d1 - d2) - d3 + d4;
    v[3 * vs + l] = 2.f * (d3 - d1) - d2 + d4;
    v[4 * vs + l] = 2.f * (d1 - d3) - d2 + d4;
    v[5 * vs + l] = 4.f * d1 - 5.f * d3 + d5;
  }
}

// o = A^T m along one axis: six rows of lanes in, four out.
inline void output_1d(const float* m, int64_t ms, float* o, int64_t os) {
  for (int l = 0; l < kLanes; ++l) {
    const float a = m[ms + l] + m[2 * ms + l], b = m[ms + l] - m[2 * ms + l];
    const float c = m[3 * ms + l] + m[4 * ms + l], e = m[3 * ms + l] - m[4 * ms + l];
    o[l] = m[l] + a + c;
    o[os + l] = b + 2.f * e;
    o[2 * os + l] = a + 4.f * c;
    o[3 * os + l] = b + 8.f * e + m[5 * ms + l];
  }
}

}  // namespace

bool winograd_enabled() { return env_switch("MINFER_CPU_WINOGRAD", true); }

bool winograd_pays(const WinogradShape& s) {
  return s.c >= kWinogradMinInputChannels && s.m >= 1 && s.oh >= kWinogradMinPlane &&
         s.ow >= kWinogradMinPlane;
}

int64_t WinogradConv::prepare(PrepareContext& ctx, const WinogradShape& s,
                              const float* weights) {
  s_ = s;
  const LevelKernels* level = has_any_isa() ? level_kernels(active_isa()) : nullptr;
  runs_ = level ? level->winograd : nullptr;
  tiles_w_ = ceil_div(s.ow, kTile);
  tiles_ = ceil_div(s.oh, kTile) * tiles_w_;
  // ConvGemm's tiles where they pay, else Eigen's packed GEMM: on AVX-512, and on AVX2 from
  // 256 input channels (ResNet's 14x14 convs, one block of 16 tiles: 16-20 % faster on a Zen 5
  // at MINFER_ISA=avx2, 10 % at batch 8; 128 channels on 28x28 ran 8 % slower at batch 1).
  const bool direct = has_any_isa() && ConvGemm::pays_deep(s.c, kAvx2DirectMinChannels,
                                                           fp32_micro_kernels().isa);
  // Whole micro-kernel panels, as many as the L2 budget allows. Independent of the batch, so
  // that the plans of every batch size share the packing.
  const int64_t align = direct ? fp32_micro_kernels().nr : kAlignCols;
  block_ = std::max(align, kBlockBytes / (kPoints * (s.c + s.m) * int64_t(sizeof(float))) /
                               align * align);
  // The workspace holds no more tiles than this batch has (a small plane's few channels would
  // otherwise take the whole L2 budget per thread: 512 KB for a 16x16 plane's 64 tiles).
  ld_ = round_up(std::min(block_, round_up(s.n * tiles_, align)), kLanes);
  const int64_t m = s.m, c = s.c, block = block_;
  // U = G g G^T per (output, input) channel pair, in double, stored as 36 [M, C].
  auto transform_weights = [&] {
    std::vector<float> u(size_t(kPoints) * size_t(m * c));
        for (int64_t oc = 0; oc < m; ++oc)
          for (int64_t ic = 0; ic < c; ++ic) {
            const float* g = weights + (oc * c + ic) * 9;
            double gg[kIn][3];  // G g
            for (int i = 0; i < kIn; ++i)
              for (int k = 0; k < 3; ++k)
                gg[i][k] = kG[i][0] * g[k] + kG[i][1] * g[3 + k] + kG[i][2] * g[6 + k];
            for (int i = 0; i < kIn; ++i)
              for (int j = 0; j < kIn; ++j) {
                const double v = gg[i][0] * kG[j][0] + gg[i][1] * kG[j][1] + gg[i][2] * kG[j][2];
                u[size_t(i * kIn + j) * size_t(m * c) + size_t(oc * c + ic)] = float(v);
              }
          }
    return u;
  };
  const size_t bytes = size_t(kPoints) * size_t(m) * size_t(c) * sizeof(float);
  int64_t scratch = 0;
  if (direct) {
    const f32::MicroKernels& tiles = fp32_micro_kernels();
    u_.reset();
    u_direct_ = ctx.share<std::vector<ConvGemm>>(
        std::string("cpu.conv.winograd.direct.") + isa_name(tiles.isa), bytes, [&] {
          const std::vector<float> u = transform_weights();
          auto gemms = std::make_shared<std::vector<ConvGemm>>();
          gemms->reserve(kPoints);
          for (int p = 0; p < kPoints; ++p)
            gemms->emplace_back(u.data() + size_t(p) * size_t(m * c), m, c, tiles);
          return gemms;
        });
    scratch = int64_t((*u_direct_)[0].scratch_floats());
  } else {
    u_direct_.reset();
    u_ = ctx.share<std::vector<PackedWeights>>(
        "cpu.conv.winograd.block" + std::to_string(block), bytes, [&] {
          const std::vector<float> u = transform_weights();
          auto packs = std::make_shared<std::vector<PackedWeights>>();
          packs->reserve(kPoints);
          for (int p = 0; p < kPoints; ++p)
            packs->emplace_back(u.data() + size_t(p) * size_t(m * c), m, c, c, block);
          return packs;
        });
    scratch = int64_t((*u_)[0].scratch_floats());
  }
  v_point_ = point_stride(c * ld_);
  m_point_ = point_stride(m * ld_);
  v_floats_ = kPoints * v_point_;
  m_floats_ = kPoints * m_point_;
  slice_floats_ = v_floats_ + m_floats_ + round_up(scratch, 16);
  return slice_floats_;
}

void WinogradConv::transform_input(const float* x, int64_t t0, int64_t cols, float* v, int64_t c0,
                                   int64_t c1) const {
  const WinogradShape& s = s_;
  if (c1 < 0) c1 = s.c;
  const int64_t plane = s.h * s.w, image = s.c * plane;
  if (runs_) {
    for_each_run(t0, cols, [&](int64_t g, int n, int parts, int64_t image_index, int64_t tr,
                               int64_t tc) {
      const f32::WinogradInputRun r{x + image_index * image + c0 * plane,
                                    plane,
                                    s.h,
                                    s.w,
                                    tr * kTile - s.pad_t,
                                    tc * kTile - s.pad_l,
                                    n,
                                    parts,
                                    c1 - c0,
                                    v + c0 * ld_ + g,
                                    ld_,
                                    v_point_,
                                    g + runs_->lanes <= ld_};
      runs_->input(r);
    });
    return;
  }
  // Without an ISA level's kernels: groups of kLanes tiles in scalar code.
  for (int64_t g = 0; g < cols; g += kLanes) {
    const int lanes = int(std::min<int64_t>(kLanes, cols - g));
    // Where each tile's 6x6 window starts.
    int64_t base[kLanes], ih0[kLanes], iw0[kLanes];
    for (int l = 0; l < lanes; ++l) {
      const int64_t t = t0 + g + l, n = t / tiles_, r = t % tiles_;
      ih0[l] = r / tiles_w_ * kTile - s.pad_t;
      iw0[l] = r % tiles_w_ * kTile - s.pad_l;
      base[l] = n * image;
    }
    alignas(32) float d[kPoints * kLanes], t[kPoints * kLanes], out[kPoints * kLanes];
    // Lanes past the block's end: zeros (finite; the GEMM reads only the block's columns).
    if (lanes < kLanes) std::fill(d, d + kPoints * kLanes, 0.f);
    for (int64_t c = c0; c < c1; ++c) {
      for (int l = 0; l < lanes; ++l) {
        const float* xc = x + base[l] + c * plane;
        // An interior window needs no bounds checks.
        if (ih0[l] >= 0 && ih0[l] + kIn <= s.h && iw0[l] >= 0 && iw0[l] + kIn <= s.w) {
          const float* p = xc + ih0[l] * s.w + iw0[l];
          for (int i = 0; i < kIn; ++i)
            for (int j = 0; j < kIn; ++j) d[(i * kIn + j) * kLanes + l] = p[i * s.w + j];
        } else {
          for (int i = 0; i < kIn; ++i) {
            const int64_t ih = ih0[l] + i;
            const bool row = ih >= 0 && ih < s.h;
            for (int j = 0; j < kIn; ++j) {
              const int64_t iw = iw0[l] + j;
              d[(i * kIn + j) * kLanes + l] =
                  row && iw >= 0 && iw < s.w ? xc[ih * s.w + iw] : 0.f;
            }
          }
        }
      }
      // B^T d down the columns, then (B^T d) B along the rows.
      for (int j = 0; j < kIn; ++j)
        input_1d(d + j * kLanes, kIn * kLanes, t + j * kLanes, kIn * kLanes);
      for (int i = 0; i < kIn; ++i)
        input_1d(t + i * kIn * kLanes, kLanes, out + i * kIn * kLanes, kLanes);
      float* dst = v + c * ld_ + g;
      for (int p = 0; p < kPoints; ++p)
        std::memcpy(dst + p * v_point_, out + p * kLanes, kLanes * sizeof(float));
    }
  }
}

template <typename Store>
void WinogradConv::output_tiles(const float* mo, int64_t t0, int64_t cols, int64_t m0,
                                int64_t m1, const float* b, float* y, const float* z,
                                Store& store) const {
  const WinogradShape& s = s_;
  const int64_t plane = s.oh * s.ow, point_stride = m_point_;
  for (int64_t g = 0; g < cols; g += kLanes) {
    const int lanes = int(std::min<int64_t>(kLanes, cols - g));
    // Each tile's first output (of channel 0) and its rows and columns inside the plane.
    int64_t base[kLanes];
    int rows[kLanes], width[kLanes];
    for (int l = 0; l < lanes; ++l) {
      const int64_t t = t0 + g + l, n = t / tiles_, r = t % tiles_;
      const int64_t oh0 = r / tiles_w_ * kTile, ow0 = r % tiles_w_ * kTile;
      base[l] = n * s.m * plane + oh0 * s.ow + ow0;
      rows[l] = int(std::min<int64_t>(kTile, s.oh - oh0));
      width[l] = int(std::min<int64_t>(kTile, s.ow - ow0));
    }
    alignas(32) float m[kPoints * kLanes], t[kTile * kIn * kLanes], o[kTile * kTile * kLanes];
    for (int64_t oc = m0; oc < m1; ++oc) {
      const float* src = mo + oc * ld_ + g;
      for (int p = 0; p < kPoints; ++p)
        std::memcpy(m + p * kLanes, src + p * point_stride, kLanes * sizeof(float));
      for (int j = 0; j < kIn; ++j)
        output_1d(m + j * kLanes, kIn * kLanes, t + j * kLanes, kIn * kLanes);
      for (int i = 0; i < kTile; ++i)
        output_1d(t + i * kIn * kLanes, kLanes, o + i * kTile * kLanes, kLanes);
      const float bias = b ? b[oc] : 0.f;
      for (float& v : o) v += bias;
      for (int l = 0; l < lanes; ++l) {
        const int64_t off = base[l] + oc * plane;
        // Whole tiles (most of them) with constant bounds, which the compiler unrolls.
        if (rows[l] == kTile && width[l] == kTile)
          store(o + l, kTile, kTile, y + off, z ? z + off : nullptr);
        else
          store(o + l, rows[l], width[l], y + off, z ? z + off : nullptr);
      }
    }
  }
}

void WinogradConv::transform_output(const float* mo, int64_t t0, int64_t cols, int64_t m0,
                                    int64_t m1, const float* b, const float* z, float* y,
                                    const Activation& act) const {
  if (runs_) {
    const WinogradShape& s = s_;
    const int64_t plane = s.oh * s.ow;
    for_each_run(t0, cols, [&](int64_t g, int n, int parts, int64_t image_index, int64_t tr,
                               int64_t tc) {
      const int64_t oh0 = tr * kTile, ow0 = tc * kTile;
      const int64_t first = (image_index * s.m + m0) * plane + oh0 * s.ow + ow0;
      const f32::WinogradOutputRun r{mo + m0 * ld_ + g,
                                     ld_,
                                     m_point_,
                                     n,
                                     parts,
                                     m1 - m0,
                                     b ? b + m0 : nullptr,
                                     y + first,
                                     z ? z + first : nullptr,
                                     plane,
                                     s.ow,
                                     int(std::min<int64_t>(kTile * parts, s.oh - oh0)),
                                     int(std::min<int64_t>(kTile * n, s.ow - ow0)),
                                     act.enabled,
                                     act.lo,
                                     act.hi};
      runs_->output(r);
    });
    return;
  }
  // Without an ISA level's kernels: one copy of the loop per epilogue, so that the per-element
  // code has no branches.
  auto run = [&](auto residual, auto clamp) {
    const float lo = act.lo, hi = act.hi;
    const int64_t ld = s_.ow;
    auto store = [&](const float* o, int rows, int width, float* yt, const float* zt) {
      for (int i = 0; i < rows; ++i)
        for (int j = 0; j < width; ++j) {
          float v = o[(i * kTile + j) * kLanes];
          if constexpr (decltype(residual)::value) v += zt[i * ld + j];
          if constexpr (decltype(clamp)::value) {  // as Activation::apply: NaN stays NaN
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
          }
          yt[i * ld + j] = v;
        }
    };
    output_tiles(mo, t0, cols, m0, m1, b, y, z, store);
  };
  using Yes = std::true_type;
  using No = std::false_type;
  if (z)
    act.enabled ? run(Yes{}, Yes{}) : run(Yes{}, No{});
  else
    act.enabled ? run(No{}, Yes{}) : run(No{}, No{});
}

void WinogradConv::run(const float* x, const float* b, const float* z, float* y,
                       const Activation& act, float* workspace, int threads) const {
  const int64_t total = s_.n * tiles_;  // tiles of the batch; a block may span images
  // Blocks of whole vectors of the GEMM's tiles (16 tiles on zmm; 8 for Eigen's GEMM, which
  // is also the transforms' group): a 56x56 plane's 196 tiles as 6 x 32 + 4 took 13 zmm
  // columns of GEMM where blocks of 24 (8 x 24 + 4) took 17; 49 tiles as 32 + 17 took 4
  // where 24 + 24 + 1 took 5. (Each conv alone, a Zen 4: 56x56 2-3 % faster, 28x28 12 % at 1
  // thread and 23 % at 2.)
  const int64_t align = u_direct_ ? (*u_direct_)[0].tile_columns() / 2 : kLanes;
  // At least a block per thread where the tiles make whole vectors for each: a small plane
  // in one block (a CIFAR ResNet's 32x32, 64 tiles) would otherwise leave all but one thread
  // idle, or split its few output channels into GEMMs too short to pay.
  const int64_t blocks =
      std::max(ceil_div(total, block_), std::min<int64_t>(threads, total / align));
  const int64_t cols = std::min(ld_, round_up(ceil_div(total, blocks), align));
  // Blocks that leave a thread more than 1.25x the average of them (batch 1 on a small plane):
  // the units also split the output channels, each part transforming the block's input itself
  // (cheap next to its GEMMs), unless there are fewer blocks than threads (below). (At 7
  // blocks for 2 threads, a 56x56 plane of 64 channels, 4 : 3 blocks ran 1.17x faster than
  // 3.5 : 3.5 as halves of the channels, whose GEMMs are smaller; Zen 5.)
  int64_t parts = 1;
  if (threads > 1 && ceil_div(blocks, threads) * threads * 4 > blocks * 5)
    for (int64_t p = 1; p <= 2 * threads && s_.m / p >= 16; ++p)  // GEMMs of >= 16 rows
      if (blocks * p % threads == 0) {
        parts = p;
        break;
      }
  // Channel boundaries on multiples of the packed panels' rows (4 for Eigen's, 6 for ConvGemm's).
  const int64_t panel = u_direct_ ? ConvGemm::kPanelRows : 4;
  auto channel = [&](int64_t i) { return aligned_split_begin(s_.m, parts, i, panel); };
  const Activation none;
  const int64_t units = ceil_div(total, cols) * parts;
  // The threads split the units by their cost, not their count: the tiles they transform and
  // multiply, in whole vectors (the last block may be small: a block of 1 tile cost as much as
  // 8 or 16, and by count one of 2 threads took 36 of 49 tiles; ResNet-18's 28x28 convs ran
  // 1.2-1.3x faster on 2 threads than on 1, then 1.95x; the whole model 4-6 % faster at 2
  // threads on a Zen 3).
  auto unit_cost = [&](int64_t u) {
    return round_up(std::min(cols, total - u / parts * cols), align);
  };
  int64_t all = 0;
  for (int64_t u = 0; u < units; ++u) all += unit_cost(u);
  auto first_unit = [&](int part, int nparts) {  // where a thread's units start
    const int64_t target = all * part / nparts;
    int64_t u = 0;
    for (int64_t sum = 0; u < units && sum + unit_cost(u) / 2 < target; ++u) sum += unit_cost(u);
    return u;
  };
  // Fewer blocks than threads (a 14x14 plane is one block): every part would transform the
  // whole block's input, so the threads first transform it together, split by input channels,
  // block b into thread b's slice. (On 2 threads ResNet's 14x14 convs ran 1.5-1.7x faster than
  // on 1 with each transforming it; ResNet-18 at 2 threads gained 1-7 % (p25 of 5 in-process
  // A/B rounds, Zen 3). With N threads each would transform the whole block N times.)
  const bool shared_input = parts > 1 && blocks < threads;
  if (shared_input)
    parallel_for(threads, blocks * threads, [&](int64_t u) {
      const int64_t block = u / threads, part = u % threads, t0 = block * cols;
      transform_input(x, t0, std::min(cols, total - t0), workspace + block * slice_floats_,
                      s_.c * part / threads, s_.c * (part + 1) / threads);
    });
  parallel_region(threads, [&](int tid, int nt) {
    float* v = workspace + tid * slice_floats_;
    float* mo = v + v_floats_;
    float* scratch = mo + m_floats_;
    int64_t transformed = -1;  // the block whose input v holds
    for (int64_t u = first_unit(tid, nt); u < first_unit(tid + 1, nt); ++u) {
      const int64_t block = u / parts, t0 = block * cols, n = std::min(cols, total - t0);
      const int64_t m0 = channel(u % parts), m1 = channel(u % parts + 1);
      if (n <= 0 || m0 >= m1) continue;
      if (shared_input)
        v = workspace + block * slice_floats_;
      else if (block != transformed)
        transform_input(x, t0, n, v), transformed = block;
      for (int p = 0; p < kPoints; ++p) {
        float* prod = mo + p * m_point_;
        const float* vp = v + p * v_point_;
        if (u_direct_) {
          (*u_direct_)[p].run(vp, ld_, n, nullptr, nullptr, prod, ld_, none, scratch, m0, m1);
          continue;
        }
        std::fill(prod + m0 * ld_, prod + m1 * ld_, 0.f);  // the GEMM accumulates
        (*u_)[p].multiply(m0, m1, vp, ld_, n, prod, ld_, scratch);
      }
      transform_output(mo, t0, n, m0, m1, b, z, y, act);
    }
  });
}

}  // namespace minfer::cpu
