#include "minfer/registry.h"

#include <algorithm>
#include <cstring>

#include "ops/fp16/half_ops.h"
#include "ops/fused_ops.h"
#include "ops/int8/int8_ops.h"
#include "ops/max_sum_div3.h"
#include "ops/nhwc_ops.h"
#include "ops/space_to_depth_nhwc.h"

namespace minfer {

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();  // never destroyed: kernels may be looked up at exit
    register_builtin_ops(*r);
    register_max_sum_div3(*r);  // through the public API, as a user registers an op
    register_fused_ops(*r);
    register_fp16_ops(*r);  // ops/fp16: the ops of --precision fp16
    register_nhwc_ops(*r);  // ops the channels-last pass makes
    register_space_to_depth_nhwc(*r);
    register_int8_ops(*r);  // ops/int8 schemas + backends/cpu/int8 kernels
    register_cpu_kernels(*r);
    register_cuda_kernels(*r);
    return r;
  }();
  return *registry;
}

void OpRegistry::register_op(OpSchema schema) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& op : ops_)
    check(!(op->domain == schema.domain && op->name == schema.name), ErrorCode::InvalidArgument,
          "op '" + schema.qualified_name() + "' is already registered");
  check(!schema.name.empty(), ErrorCode::InvalidArgument, "register_op: the op has no name");
  check(bool(schema.infer), ErrorCode::InvalidArgument,
        "register_op: op '" + schema.qualified_name() + "' has no shape inference function");
  check(bool(schema.reference), ErrorCode::InvalidArgument,
        "register_op: op '" + schema.qualified_name() + "' has no reference kernel");
  ops_.push_back(std::make_unique<OpSchema>(std::move(schema)));
}

void OpRegistry::register_kernel(KernelDef def) {
  std::lock_guard<std::mutex> lock(mutex_);
  check(bool(def.create), ErrorCode::InvalidArgument,
        "register_kernel: kernel for '" + def.op_type + "' has no factory");
  kernels_.push_back(std::make_unique<KernelDef>(std::move(def)));
}

const OpSchema* OpRegistry::find_op(const std::string& domain, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // "ai.onnx" is the ONNX default domain under another name.
  const std::string& d = (domain == "ai.onnx") ? std::string() : domain;
  for (const auto& op : ops_)
    if (op->domain == d && op->name == name) return op.get();
  return nullptr;
}

const OpSchema& OpRegistry::get_op(const std::string& domain, const std::string& name) const {
  const OpSchema* op = find_op(domain, name);
  if (!op)
    throw Error(ErrorCode::Unsupported,
                "unknown op '" + name + "' (domain '" + (domain.empty() ? "ai.onnx" : domain) +
                    "'): no such op is registered; if it comes from a plugin, load it with "
                    "--plugin LIB.so (or register it with OpRegistry::register_op)");
  return *op;
}

const KernelDef* OpRegistry::find_kernel(const PrepareContext& ctx, Device::Type device) const {
  std::vector<const KernelDef*> candidates;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string& d = ctx.node.domain == "ai.onnx" ? std::string() : ctx.node.domain;
    for (const auto& k : kernels_) {
      if (k->device != device || k->domain != d || k->op_type != ctx.node.op_type) continue;
      if (!k->dtypes.empty() && !ctx.inputs.empty() && ctx.inputs[0].present &&
          std::find(k->dtypes.begin(), k->dtypes.end(), ctx.inputs[0].dtype) == k->dtypes.end())
        continue;
      candidates.push_back(k.get());
    }
  }
  // Later registrations win, so a user can override a built-in kernel.
  for (auto it = candidates.rbegin(); it != candidates.rend(); ++it)
    if (!(*it)->supports || (*it)->supports(ctx)) return *it;
  return nullptr;
}

std::vector<const OpSchema*> OpRegistry::ops() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const OpSchema*> r;
  for (const auto& op : ops_) r.push_back(op.get());
  std::sort(r.begin(), r.end(), [](const OpSchema* a, const OpSchema* b) {
    return std::tie(a->domain, a->name) < std::tie(b->domain, b->name);
  });
  return r;
}

std::vector<const KernelDef*> OpRegistry::kernels(const std::string& domain,
                                                  const std::string& name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const KernelDef*> r;
  for (const auto& k : kernels_)
    if (k->domain == domain && k->op_type == name) r.push_back(k.get());
  return r;
}

namespace {
// Runs the schema's reference function and copies the results into the planned outputs.
class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(const OpSchema& schema) : schema_(schema) {}
  void prepare(PrepareContext& ctx) override { node_ = &ctx.node; }
  void run(RunContext& ctx) const override {
    std::vector<Tensor> inputs;
    for (const Tensor* t : ctx.inputs) inputs.push_back(t ? *t : Tensor());
    std::vector<Tensor> outputs = schema_.reference(*node_, inputs);
    for (size_t i = 0; i < ctx.outputs.size() && i < outputs.size(); ++i) {
      Tensor* out = ctx.outputs[i];
      if (!out) continue;
      check(outputs[i].shape() == out->shape() && outputs[i].dtype() == out->dtype(),
            ErrorCode::Internal,
            node_->describe() + ": reference output " + std::to_string(i) + " is " +
                dtype_name(outputs[i].dtype()) + outputs[i].shape().to_string() + ", planned " +
                dtype_name(out->dtype()) + out->shape().to_string());
      if (out->nbytes()) std::memcpy(out->raw(), outputs[i].raw(), out->nbytes());
    }
  }

 private:
  const OpSchema& schema_;
  const Node* node_ = nullptr;
};
}  // namespace

std::unique_ptr<Kernel> make_reference_kernel(const OpSchema& schema) {
  return std::make_unique<ReferenceKernel>(schema);
}

}  // namespace minfer
