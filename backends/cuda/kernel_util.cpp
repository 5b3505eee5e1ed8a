// Helpers shared by the CUDA kernels (backends/cuda/kernels.h).
#include "backends/cuda/kernels.h"
#include "backends/cpu/epilogue.h"
#include "backends/cuda_api.h"

namespace minfer::cuda {

bool is_static(const PrepareContext& ctx, size_t i, DType t) {
  if (i >= ctx.inputs.size()) return false;
  const TensorInfo& info = ctx.inputs[i];
  return info.present && info.dtype == t && info.shape.is_static() &&
         info.shape.numel() <= kMaxElements;
}

bool outputs_fit(const PrepareContext& ctx) {
  for (const TensorInfo& o : ctx.outputs)
    if (o.present && (!o.shape.is_static() || o.shape.numel() > kMaxElements)) return false;
  return !ctx.outputs.empty();
}

Clamp fused_clamp(const PrepareContext& ctx) {
  const cpu::Activation act = cpu::parse_activation(ctx.node);
  if (!act.is_clamp())
    ctx.fail("the CUDA kernels fuse only Relu and Clip, not activation '" +
             ctx.node.attrs.get_string("activation", "") + "'");
  return {act.enabled, act.lo, act.hi};
}

Window2d window_2d(const WindowGeometry& g) {
  const bool two_d = g.rank() == 2;
  Window2d w;
  w.h = two_d ? int(g.in_h()) : 1;
  w.w = int(g.input.back());
  w.oh = two_d ? int(g.out_h()) : 1;
  w.ow = int(g.output.back());
  w.kh = two_d ? int(g.kernel_h()) : 1;
  w.kw = int(g.kernel.back());
  w.sh = two_d ? int(g.stride_h()) : 1;
  w.sw = int(g.strides.back());
  w.dh = two_d ? int(g.dilation_h()) : 1;
  w.dw = int(g.dilations.back());
  w.pad_t = two_d ? int(g.pad_top()) : 0;
  w.pad_l = int(g.pads_begin.back());
  return w;
}

DeviceContext& device_context(const PrepareContext& ctx) {
  if (!ctx.device_context) ctx.fail("the CUDA kernel needs a CUDA device context");
  return *ctx.device_context;
}

DeviceBuffer upload(DeviceContext& ctx, const void* data, size_t bytes) {
  DeviceBuffer buffer(ctx, bytes);
  if (bytes) {
    copy_to_device(ctx, buffer.get(), data, bytes);
    synchronize(ctx);
  }
  return buffer;
}

KernelDef kernel_def(const std::string& domain, const std::string& op, std::vector<DType> dtypes,
                     const std::string& name, std::function<bool(const PrepareContext&)> supports,
                     std::function<std::unique_ptr<Kernel>()> create) {
  KernelDef def;
  def.domain = domain;
  def.op_type = op;
  def.device = Device::Type::CUDA;
  def.dtypes = std::move(dtypes);
  def.name = name;
  def.supports = std::move(supports);
  def.create = std::move(create);
  def.graph_capturable = true;  // the built-in kernels only enqueue on the stream
  return def;
}

}  // namespace minfer::cuda
