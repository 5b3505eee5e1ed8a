// Helpers shared by the CUDA kernels (backends/cuda/kernels.h).
#include "backends/cuda/kernels.h"
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
  return def;
}

}  // namespace minfer::cuda
