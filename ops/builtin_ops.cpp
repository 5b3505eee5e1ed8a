#include "ops/builtin_ops.h"

#include <string>

#include "ops/op_util.h"

namespace minfer {

namespace {

// Beyond this many inputs (variadic ops such as Concat) absent inputs are not padded.
constexpr int kMaxPaddedInputs = 16;

void check_arity(const OpSchema& s, const InferContext& ctx) {
  int ni = static_cast<int>(ctx.num_inputs()), no = static_cast<int>(ctx.num_outputs());
  auto range = [](int lo, int hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi);
  };
  if (ni < s.min_inputs || ni > s.max_inputs)
    ctx.fail("has " + std::to_string(ni) + " inputs, expected " +
             range(s.min_inputs, s.max_inputs));
  if (no < s.min_outputs || no > s.max_outputs)
    ctx.fail("has " + std::to_string(no) + " outputs, expected " +
             range(s.min_outputs, s.max_outputs));
  for (int i = 0; i < s.min_inputs; ++i)
    if (!ctx.has_input(i)) ctx.fail("required input " + std::to_string(i) + " is missing");
}

std::vector<Tensor> run_reference(const OpSchema& s, const ReferenceFn& fn, const Node& node,
                                  const std::vector<Tensor>& inputs) {
  std::vector<TensorInfo> infos;
  for (const Tensor& t : inputs) {
    TensorInfo info;
    if (t.defined()) {
      op_require(node, t.device().is_cpu(), "reference kernels need CPU tensors");
      info.present = true;
      info.dtype = t.dtype();
      info.shape = t.shape();
      info.constant = &t;
    }
    infos.push_back(info);
  }
  InferContext ctx(node, infos);
  s.infer(ctx);  // already wrapped with check_arity

  std::vector<Tensor> padded = inputs;
  if (s.max_inputs <= kMaxPaddedInputs && padded.size() < size_t(s.max_inputs))
    padded.resize(s.max_inputs);
  std::vector<Tensor> out;
  try {
    out = fn(node, padded);
  } catch (const Error& e) {
    // As in inference: errors from shared helpers (attribute types) get the node's name.
    const std::string name = node.describe();
    if (std::string(e.what()).find(name) != std::string::npos) throw;
    throw Error(e.code(), name + ": " + e.what());
  }

  if (out.size() != ctx.num_outputs())
    throw Error(ErrorCode::Internal, node.describe() + ": reference returned " +
                                         std::to_string(out.size()) + " outputs, expected " +
                                         std::to_string(ctx.num_outputs()));
  for (size_t i = 0; i < out.size(); ++i) {
    const TensorInfo& inf = ctx.outputs()[i];
    if (!inf.present) continue;
    bool same = out[i].dtype() == inf.dtype && out[i].rank() == inf.shape.rank();
    for (size_t d = 0; same && d < inf.shape.rank(); ++d)
      same = inf.shape[d] < 0 || inf.shape[d] == out[i].dim(d);
    if (!same)
      throw Error(ErrorCode::Internal, node.describe() + ": reference output " + std::to_string(i) +
                                           " is " + dtype_name(out[i].dtype()) +
                                           out[i].shape().to_string() + ", inferred " +
                                           dtype_name(inf.dtype) + inf.shape.to_string());
  }
  return out;
}

}  // namespace

void add_builtin_op(OpRegistry& registry, OpSchema schema) {
  InferFn infer = std::move(schema.infer);
  ReferenceFn reference = std::move(schema.reference);
  OpSchema limits = schema;  // counts only; the functions are captured separately
  schema.infer = [limits, infer](InferContext& ctx) {
    check_arity(limits, ctx);
    try {
      infer(ctx);
    } catch (const Error& e) {
      // Errors from shared helpers (an attribute of the wrong type) do not know the node.
      const std::string node = ctx.node().describe();
      if (std::string(e.what()).find(node) != std::string::npos) throw;
      throw Error(e.code(), node + ": " + e.what());
    }
  };
  OpSchema checked = limits;
  checked.infer = schema.infer;
  schema.reference = [checked, reference](const Node& node, const std::vector<Tensor>& inputs) {
    return run_reference(checked, reference, node, inputs);
  };
  registry.register_op(std::move(schema));
}

void register_builtin_ops(OpRegistry& registry) {
  register_conv_ops(registry);
  register_matmul_ops(registry);
  register_elementwise_ops(registry);
  register_pool_ops(registry);
  register_norm_ops(registry);
  register_shape_ops(registry);
  register_concat_gather_ops(registry);
  register_slice_pad_ops(registry);
  register_compare_where_ops(registry);
  register_reduce_ops(registry);
  register_cast_ops(registry);
  register_integer_ops(registry);
  register_generator_ops(registry);
  register_dropout_op(registry);
  register_lrn_op(registry);
  register_math_ops(registry);
  register_squeeze_split_ops(registry);
  register_expand_tile_ops(registry);
  register_layer_norm_op(registry);
  register_resize_op(registry);
  register_mod_not_ops(registry);
  register_scatter_nd_op(registry);
}

}  // namespace minfer
