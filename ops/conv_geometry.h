// Sliding-window geometry shared by Conv, MaxPool and AveragePool: output sizes and resolved
// pads from a node's attributes (kernel_shape, strides, pads, dilations, auto_pad, ceil_mode)
// and the input shape. One implementation, used by shape inference, the reference kernels and
// the optimized CPU/CUDA kernels, so they can never disagree on the output size.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "minfer/graph.h"

namespace minfer {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

// Parses the ONNX auto_pad attribute ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID");
// throws InvalidModel naming the node for anything else.
AutoPad parse_auto_pad(const Node& node);

// The spatial part of a sliding window over `rank()` spatial dims (H, W for 2-D).
// All vectors have one entry per spatial dim. A negative input size is symbolic: the output
// size (and, for SAME_* auto_pad, the pads) of that dim are then unknown (-1).
struct WindowGeometry {
  std::vector<int64_t> input;       // spatial input sizes
  std::vector<int64_t> kernel;      // spatial kernel sizes (undilated)
  std::vector<int64_t> strides;     // default 1
  std::vector<int64_t> dilations;   // default 1
  std::vector<int64_t> pads_begin;  // resolved: explicit pads or auto_pad applied
  std::vector<int64_t> pads_end;
  std::vector<int64_t> output;  // spatial output sizes
  AutoPad auto_pad = AutoPad::NotSet;
  bool ceil_mode = false;

  size_t rank() const { return kernel.size(); }
  int64_t effective_kernel(size_t i) const { return (kernel[i] - 1) * dilations[i] + 1; }
  bool is_static() const;  // every input/output size known

  // 2-D shorthands (valid when rank() == 2).
  int64_t in_h() const { return input[0]; }
  int64_t in_w() const { return input[1]; }
  int64_t out_h() const { return output[0]; }
  int64_t out_w() const { return output[1]; }
  int64_t kernel_h() const { return kernel[0]; }
  int64_t kernel_w() const { return kernel[1]; }
  int64_t stride_h() const { return strides[0]; }
  int64_t stride_w() const { return strides[1]; }
  int64_t dilation_h() const { return dilations[0]; }
  int64_t dilation_w() const { return dilations[1]; }
  int64_t pad_top() const { return pads_begin[0]; }
  int64_t pad_left() const { return pads_begin[1]; }
  int64_t pad_bottom() const { return pads_end[0]; }
  int64_t pad_right() const { return pads_end[1]; }
};

// Conv: X [N, C, D1..Dk], W [M, C/group, K1..Kk], optional B [M], Y [N, M, O1..Ok].
struct ConvGeometry : WindowGeometry {
  int64_t batch = -1;        // N (may be symbolic)
  int64_t in_channels = -1;  // C (may be symbolic only if group == 1; it is checked when known)
  int64_t out_channels = 0;  // M (always known: it comes from the weight)
  int64_t group = 1;

  int64_t in_channels_per_group() const { return in_channels < 0 ? -1 : in_channels / group; }
  int64_t out_channels_per_group() const { return out_channels / group; }
  bool is_depthwise() const { return group > 1 && group == in_channels && group == out_channels; }
};

// MaxPool / AveragePool: X [N, C, D1..Dk], Y [N, C, O1..Ok].
struct PoolGeometry : WindowGeometry {
  int64_t batch = -1;
  int64_t channels = -1;
  bool count_include_pad = false;  // AveragePool only
};

// The attributes conv_geometry() reads, for the schemas of the ops that call it.
const std::vector<std::string>& conv_attributes();

// Validates a Conv node's attributes against the shapes of X and W and computes the geometry.
// Throws InvalidModel naming the node, e.g. "Conv 'c1': weight has 4 input channels per
// group, input has 3 channels (group 1)".
ConvGeometry conv_geometry(const Node& node, const Shape& x, const Shape& w);

// The same for MaxPool/AveragePool (kernel_shape is required; ceil_mode, count_include_pad
// and dilations are read where present).
PoolGeometry pool_geometry(const Node& node, const Shape& x);

// The output shape [N, M|C, O1..Ok] of a window op, keeping the names of symbolic N (and C).
Shape window_output_shape(const WindowGeometry& g, const Shape& x, int64_t out_channels);

// The taps t in [lo, hi) of a window whose first tap is at input position `start` (k taps,
// `dilation` apart) that land in [begin, end). Kernels loop over this range instead of testing
// every tap, so their work does not grow with a kernel far larger than its input.
struct TapRange {
  int64_t lo = 0, hi = 0;
  int64_t size() const { return hi - lo; }
};
TapRange taps_in(int64_t start, int64_t k, int64_t dilation, int64_t begin, int64_t end);

// A geometry padded to exactly 3 spatial dims (leading dims of size 1, stride 1, no pads), so
// that one loop nest serves 1-D, 2-D and 3-D windows. Requires rank() <= 3.
struct Window3 {
  int64_t in[3], out[3], k[3], s[3], d[3], pb[3], pe[3];
};
Window3 to_window3(const WindowGeometry& g);

}  // namespace minfer
