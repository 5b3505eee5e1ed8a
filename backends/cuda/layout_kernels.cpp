// Data movement on CUDA, for any element type:
//  * Flatten, Reshape, Identity, Unsqueeze: a device-to-device copy (only the shape changes).
//  * Transpose, Slice, Pad: a gather through an index map made once at prepare by running the
//    op's reference kernel on the element indices themselves, so the GPU moves exactly the
//    elements the reference does (every attribute and mode included) with one small kernel.
#include <cstring>

#include "backends/cuda/kernels.h"

namespace minfer::cuda {

namespace {

class CopyCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    return !ctx.inputs.empty() && ctx.inputs[0].present && ctx.outputs.size() == 1 &&
           ctx.outputs[0].present && ctx.inputs[0].dtype == ctx.outputs[0].dtype &&
           ctx.inputs[0].shape.is_static() && ctx.outputs[0].shape.is_static() &&
           ctx.inputs[0].shape.numel() == ctx.outputs[0].shape.numel();
  }
  void run(RunContext& ctx) const override {
    const Tensor& x = *ctx.inputs[0];
    Tensor& y = *ctx.outputs[0];
    if (y.raw() != x.raw()) copy_on_device(*ctx.device_context, y.raw(), x.raw(), y.nbytes());
  }
};

class GatherCuda final : public Kernel {
 public:
  static bool supports(const PrepareContext& ctx) {
    if (ctx.inputs.empty() || !ctx.inputs[0].present || !ctx.inputs[0].shape.is_static() ||
        ctx.inputs[0].shape.numel() >= kMaxElements || ctx.outputs.size() != 1 ||
        !outputs_fit(ctx) || ctx.outputs[0].dtype != ctx.inputs[0].dtype)
      return false;
    const size_t es = dtype_size(ctx.inputs[0].dtype);
    if (es != 1 && es != 2 && es != 4 && es != 8) return false;
    // The parameters (Slice's starts/ends/axes/steps, Pad's pads/value/axes) must be known.
    for (size_t i = 1; i < ctx.inputs.size(); ++i)
      if (ctx.inputs[i].present && !ctx.inputs[i].constant) return false;
    // The map marks padding with 0; opset < 11 Pad's `value` attribute would alias an index.
    return !(ctx.node.op_type == "Pad" && ctx.node.inputs.size() <= 1 &&
             ctx.node.attrs.get_float("value", 0.f) != 0.f);
  }

  void prepare(PrepareContext& ctx) override {
    DeviceContext& dc = device_context(ctx);
    const TensorInfo& x = ctx.inputs[0];
    elem_size_ = int(dtype_size(x.dtype));
    // Element i of X holds i + 1; a padded output element gets 0.
    Tensor index(DType::i32, x.shape);
    for (int64_t i = 0; i < index.numel(); ++i) index.data<int32_t>()[i] = int32_t(i + 1);
    const bool pad = ctx.node.op_type == "Pad";
    std::vector<Tensor> inputs = {index};
    for (size_t i = 1; i < ctx.inputs.size(); ++i) {
      const TensorInfo& in = ctx.inputs[i];
      if (pad && i == 2 && in.present) {
        // constant_value: the pad marker 0 for the map; its bytes are the pad value.
        std::memcpy(&pad_, in.constant->raw(), std::min<size_t>(in.constant->nbytes(), 8));
        inputs.push_back(Tensor(DType::i32, in.constant->shape()));
      } else {
        inputs.push_back(in.present ? *in.constant : Tensor());
      }
    }
    const OpSchema& schema = OpRegistry::global().get_op(ctx.node.domain, ctx.node.op_type);
    const Tensor out = schema.reference(ctx.node, inputs).at(0);
    if (out.shape() != ctx.outputs[0].shape)
      ctx.fail("the index map has shape " + out.shape().to_string() + ", the output " +
               ctx.outputs[0].shape.to_string());
    std::vector<int32_t> map(size_t(out.numel()));
    for (size_t i = 0; i < map.size(); ++i) map[i] = out.data<int32_t>()[i] - 1;
    map_ = upload(dc, map);
    n_ = int(map.size());
  }

  void run(RunContext& ctx) const override {
    DeviceContext& dc = *ctx.device_context;
    DeviceGuard guard(dc.device);
    gather(ctx.inputs[0]->raw(), map_.as<int32_t>(), ctx.outputs[0]->raw(), n_, elem_size_, pad_,
           dc.stream);
  }

 private:
  DeviceBuffer map_;  // source index of every output element, -1 for the pad value
  int n_ = 0, elem_size_ = 1;
  uint64_t pad_ = 0;  // the pad value's bytes
};

}  // namespace

void register_layout_kernels(OpRegistry& r) {
  for (const char* op : {"Flatten", "Reshape", "Identity", "Unsqueeze"})
    r.register_kernel(kernel_def("", op, {}, "cuda-copy", CopyCuda::supports,
                                 [] { return std::make_unique<CopyCuda>(); }));
  for (const char* op : {"Transpose", "Slice", "Pad"})
    r.register_kernel(kernel_def("", op, {}, "cuda-gather", GatherCuda::supports,
                                 [] { return std::make_unique<GatherCuda>(); }));
}

}  // namespace minfer::cuda
