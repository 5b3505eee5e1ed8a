// ONNX ModelProto -> minfer::Graph. Import is pure translation: no shape inference, no
// registry lookups (unknown ops are kept and reported later by the session), except for the
// few opset-version semantics that op schemas cannot see because they only see the Node.
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <climits>
#include <filesystem>
#include <set>

#include "minfer/onnx.h"
#include "runtime/file_util.h"
#include "runtime/onnx_qoperator.h"
#include "runtime/tensor_pb.h"

namespace minfer {

namespace {

// The newest opset of the default domain whose semantics minfer implements.
constexpr int64_t kMaxOpset = 25;

// "ai.onnx" is the default domain under its long name.
std::string normalize_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

class Importer {
 public:
  // `model` is emptied of its initializers' data as they become tensors (see run()).
  Importer(onnx::ModelProto& model, std::string base_dir, std::string source)
      : model_(model), base_dir_(std::move(base_dir)), src_(std::move(source)) {}

  Graph run() {
    check(model_.has_graph(), ErrorCode::InvalidModel,
          src_ + ": not a valid ONNX model (it has no graph)");
    const onnx::GraphProto& gp = model_.graph();
    if (!gp.name().empty()) g_.name = gp.name();
    read_opsets();
    check(gp.sparse_initializer_size() == 0, ErrorCode::Unsupported,
          src_ + ": sparse initializers are not supported");
    for (auto& init : *model_.mutable_graph()->mutable_initializer()) {
      std::string what = src_ + ": initializer '" + init.name() + "'";
      check(!init.name().empty(), ErrorCode::InvalidModel, src_ + ": an initializer has no name");
      g_.add_constant(init.name(), detail::tensor_from_proto(init, base_dir_, what));
      // Its bytes now live in the tensor: freed at once, the weights are held once, not twice
      // (Clear() would keep the string's capacity).
      onnx::TensorProto().Swap(&init);
    }
    for (const auto& in : gp.input()) read_input(in);
    for (const auto& n : gp.node()) {
      for (const auto& out : n.output())
        if (!out.empty()) produced_.insert(out);
      for (const auto& in : n.input()) consumed_.insert(in);
    }
    for (const auto& out : gp.output()) consumed_.insert(out.name());
    // Constant nodes first, so that nodes listed before them (ONNX asks for, but does not
    // always get, topological order) still find their values.
    for (const auto& n : gp.node())
      if (is_constant_node(n)) read_constant_node(n);
    for (const auto& n : gp.node())
      if (!is_constant_node(n)) read_node(n);
    read_outputs();
    g_.topo_order();  // throws InvalidModel naming a node on a cycle
    return std::move(g_);
  }

 private:
  static bool is_constant_node(const onnx::NodeProto& n) {
    return n.op_type() == "Constant" && normalize_domain(n.domain()).empty();
  }

  std::string describe(const onnx::NodeProto& n) const {
    std::string op = n.domain().empty() ? n.op_type() : n.domain() + ":" + n.op_type();
    std::string name = n.name();
    if (name.empty()) name = n.output_size() ? "output " + n.output(0) : "unnamed";
    return src_ + ": node " + op + " '" + name + "'";
  }

  void read_opsets() {
    g_.opset_imports.clear();
    for (const auto& op : model_.opset_import()) {
      const std::string domain = normalize_domain(op.domain());
      check(g_.opset_imports.count(domain) == 0, ErrorCode::InvalidModel,
            src_ + ": the opset of the " +
                (domain.empty() ? std::string("default ONNX domain") : "domain '" + domain + "'") +
                " is imported twice");
      g_.opset_imports[domain] = op.version();
    }
    auto it = g_.opset_imports.find("");
    check(it != g_.opset_imports.end(), ErrorCode::InvalidModel,
          src_ + ": not a valid ONNX model: no opset import for the default ONNX domain");
    opset_ = it->second;
    check(opset_ >= 1, ErrorCode::InvalidModel,
          src_ + ": not a valid ONNX model: opset version " + std::to_string(opset_) +
              " of the default ONNX domain (versions start at 1)");
    // A newer opset may give an op a meaning minfer does not know: refuse rather than guess.
    check(opset_ <= kMaxOpset, ErrorCode::Unsupported,
          src_ + ": the model uses opset " + std::to_string(opset_) +
              " of the default ONNX domain; minfer supports opsets up to " +
              std::to_string(kMaxOpset) + " (re-export the model at an older opset)");
  }

  void read_input(const onnx::ValueInfoProto& in) {
    if (g_.find_value(in.name()) && g_.find_value(in.name())->is_constant())
      return;  // IR < 4 lists initializers as inputs too: they are constants, not inputs
    std::string what = src_ + ": graph input '" + in.name() + "'";
    check(!in.name().empty(), ErrorCode::InvalidModel, src_ + ": a graph input has no name");
    check(in.type().has_tensor_type(), ErrorCode::Unsupported,
          what + ": only tensor inputs are supported (not sequences, maps or optionals)");
    const auto& tt = in.type().tensor_type();
    DType dtype = detail::dtype_from_onnx(tt.elem_type(), what);
    Shape shape;
    bool named = false;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        check(d.dim_value() >= 0, ErrorCode::InvalidModel,
              what + ": negative dimension " + std::to_string(d.dim_value()));
        shape.dims().push_back(d.dim_value());
      } else {
        shape.dims().push_back(Shape::kDynamic);
        named = named || d.has_dim_param();
      }
    }
    if (named) {
      for (const auto& d : tt.shape().dim()) shape.symbols.push_back(d.dim_param());
    }
    check_input_size(shape, dtype, what);
    Value* v = g_.add_input(in.name(), dtype, std::move(shape));
    v->shape_known = tt.has_shape();  // without a shape even the rank is unknown
  }

  // An input no tensor could ever be fed to (Tensor's limit is 64 GiB) is refused here, where
  // the message can name it, rather than when something first multiplies its dims.
  static void check_input_size(const Shape& shape, DType dtype, const std::string& what) {
    constexpr uint64_t kMaxBytes = uint64_t{1} << 36;
    uint64_t bytes = dtype_size(dtype);
    for (int64_t d : shape.dims())
      if (d == 0) return;  // no elements at all
    for (int64_t d : shape.dims()) {
      if (d < 0) continue;  // symbolic: checked when a real tensor arrives
      check(bytes <= kMaxBytes / static_cast<uint64_t>(d), ErrorCode::OutOfMemory,
            what + ": shape " + shape.to_string() + " " + dtype_name(dtype) +
                " is absurdly large (a tensor is limited to 64 GiB)");
      bytes *= static_cast<uint64_t>(d);
    }
  }

  Attribute read_attribute(const onnx::AttributeProto& a, const std::string& node) {
    std::string what = node + ": attribute '" + a.name() + "'";
    check(a.ref_attr_name().empty(), ErrorCode::Unsupported,
          what + ": references to function attributes are not supported");
    auto type = a.type();
    if (type == onnx::AttributeProto::UNDEFINED) {  // very old files: deduce from the field
      if (a.has_f())
        type = onnx::AttributeProto::FLOAT;
      else if (a.has_i())
        type = onnx::AttributeProto::INT;
      else if (a.has_s())
        type = onnx::AttributeProto::STRING;
      else if (a.has_t())
        type = onnx::AttributeProto::TENSOR;
      else if (a.has_g())
        type = onnx::AttributeProto::GRAPH;
      else if (a.floats_size())
        type = onnx::AttributeProto::FLOATS;
      else if (a.ints_size())
        type = onnx::AttributeProto::INTS;
      else if (a.strings_size())
        type = onnx::AttributeProto::STRINGS;
    }
    switch (type) {
      case onnx::AttributeProto::FLOAT: return a.f();
      case onnx::AttributeProto::INT: return static_cast<int64_t>(a.i());
      case onnx::AttributeProto::STRING: return a.s();
      case onnx::AttributeProto::FLOATS:
        return std::vector<float>(a.floats().begin(), a.floats().end());
      case onnx::AttributeProto::INTS:
        return std::vector<int64_t>(a.ints().begin(), a.ints().end());
      case onnx::AttributeProto::STRINGS:
        return std::vector<std::string>(a.strings().begin(), a.strings().end());
      case onnx::AttributeProto::TENSOR: return detail::tensor_from_proto(a.t(), base_dir_, what);
      case onnx::AttributeProto::GRAPH:
      case onnx::AttributeProto::GRAPHS:
        throw Error(ErrorCode::Unsupported,
                    what + " is a subgraph: control flow (If, Loop, Scan) is not supported");
      case onnx::AttributeProto::UNDEFINED:
        throw Error(ErrorCode::InvalidModel, what + " has no type and no value");
      default:
        throw Error(ErrorCode::Unsupported, what + " has type " +
                                                onnx::AttributeProto::AttributeType_Name(type) +
                                                ", which is not supported");
    }
  }

  Attributes read_attributes(const onnx::NodeProto& n) {
    Attributes attrs;
    std::string node = describe(n);
    for (const auto& a : n.attribute()) {
      check(!a.name().empty(), ErrorCode::InvalidModel, node + ": an attribute has no name");
      check(!attrs.has(a.name()), ErrorCode::InvalidModel,
            node + ": attribute '" + a.name() + "' is given twice");
      attrs.set(a.name(), read_attribute(a, node));
    }
    return attrs;
  }

  void read_constant_node(const onnx::NodeProto& n) {
    std::string node = describe(n);
    check(n.output_size() == 1 && !n.output(0).empty(), ErrorCode::InvalidModel,
          node + ": a Constant node must have exactly one output");
    Attributes attrs = read_attributes(n);
    check(attrs.all().size() == 1, ErrorCode::InvalidModel,
          node + ": a Constant node needs exactly one value attribute");
    const std::string key = attrs.all().begin()->first;
    Tensor t;
    if (key == "value") {
      t = *attrs.get_tensor(key);  // throws naming the attribute if it is not a tensor
    } else if (key == "value_float") {
      t = Tensor::scalar<float>(attrs.get_float(key, 0));
    } else if (key == "value_int") {
      t = Tensor::scalar<int64_t>(attrs.get_int(key, 0));
    } else if (key == "value_floats") {
      auto v = attrs.get_floats(key);
      t = Tensor::from_vector<float>(v, Shape{static_cast<int64_t>(v.size())});
    } else if (key == "value_ints") {
      auto v = attrs.get_ints(key);
      t = Tensor::from_vector<int64_t>(v, Shape{static_cast<int64_t>(v.size())});
    } else {
      throw Error(ErrorCode::Unsupported,
                  node + ": Constant with attribute '" + key + "' is not supported");
    }
    g_.add_constant(n.output(0), std::move(t));
  }

  Value* input_value(const std::string& name, const std::string& node) {
    if (name.empty()) return nullptr;  // an absent optional input
    if (Value* v = g_.find_value(name)) return v;
    check(produced_.count(name) != 0, ErrorCode::InvalidModel,
          node + ": input '" + name + "' is not defined by any node, initializer or graph input");
    return g_.new_value(name);  // produced by a node further down the list
  }

  // Known rank of a value at import time, or -1. Import runs no shape inference, so this only
  // covers inputs, constants and ops whose output rank is fixed.
  static int64_t known_rank(const Value* v) {
    if (v->is_constant() || (v->is_graph_input && v->shape_known))
      return static_cast<int64_t>(v->shape.rank());
    if (v->producer && (v->producer->op_type == "Flatten" || v->producer->op_type == "Gemm"))
      return 2;
    return -1;
  }

  // A value name not taken now and not written by any node of the model.
  std::string unique_name(const std::string& base) const {
    std::string name = base;
    for (int k = 1; g_.find_value(name) || produced_.count(name); ++k)
      name = base + "_" + std::to_string(k);
    return name;
  }

  // Softmax, LogSoftmax and Hardmax before opset 13 coerce the input to 2-D at `axis` (default
  // 1) and normalize over everything after it. Returns true when it emitted the nodes itself.
  bool legacy_softmax(const onnx::NodeProto& n, const std::string& name,
                      std::vector<Value*>& inputs, Attributes& attrs,
                      const std::vector<std::string>& outputs) {
    int64_t axis = attrs.get_int("axis", 1);
    std::string node = describe(n);
    check(inputs.size() == 1 && inputs[0] && outputs.size() == 1 && !outputs[0].empty(),
          ErrorCode::InvalidModel, node + ": expects one input and one output");
    std::string base = name.empty() ? outputs[0] : name;  // names the helper nodes
    if (axis == -1) return false;  // coercing at the last axis is the single-axis op
    int64_t rank = known_rank(inputs[0]);
    if (rank >= 0) {
      int64_t a = axis < 0 ? axis + rank : axis;
      check(a >= 0 && a < std::max<int64_t>(rank, 1), ErrorCode::InvalidModel,
            node + ": axis " + std::to_string(axis) + " is out of range for rank " +
                std::to_string(rank));
      if (a == rank - 1 || rank == 0) {  // one axis: the same as the opset-13 op
        attrs.set("axis", int64_t{-1});
        return false;
      }
    }
    // General case: Flatten at `axis`, normalize the last axis, restore the input's shape.
    Value* x = inputs[0];
    auto helper = [&](const std::string& op, const std::string& node_name, std::vector<Value*> ins,
                      Attributes a) {
      std::string out = unique_name(base + "/" + op + "_output");
      return g_.add_node_named(op, node_name, std::move(ins), {out}, std::move(a))->outputs[0];
    };
    Attributes flat_attrs, sm_attrs;
    flat_attrs.set("axis", axis);
    sm_attrs.set("axis", int64_t{1});
    Value* flat = helper("Flatten", base + "/flatten", {x}, flat_attrs);
    Value* sm = helper(n.op_type(), name.empty() ? base + "/2d" : name, {flat}, sm_attrs);
    Value* shape = helper("Shape", base + "/shape", {x}, {});
    g_.add_node_named("Reshape", base + "/reshape", {sm, shape}, outputs);
    return true;
  }

  // Dropout's mask at inference before opset 12 (a float tensor before 10, bool after) is
  // ambiguous: ONNX Runtime writes zeros (false), the ONNX reference ones (true), and they only
  // agree from opset 12 (all true). A mask that something reads is refused; an unread one is
  // dropped.
  bool legacy_dropout_mask(const onnx::NodeProto& n, std::vector<std::string>& outputs) {
    check(consumed_.count(outputs[1]) == 0, ErrorCode::Unsupported,
          describe(n) + ": the mask output of Dropout before opset 12 ('" + outputs[1] +
              "') is read, but its value at inference is ambiguous (ONNX Runtime gives zeros, "
              "the ONNX reference ones); re-export the model at opset 12 or later");
    outputs.resize(1);
    return false;
  }

  // Rewrites attribute forms of opsets before the ones minfer's schemas implement. Returns true
  // when it emitted the node(s) itself.
  bool normalize_legacy(const onnx::NodeProto& n, const std::string& name,
                        std::vector<Value*>& inputs, Attributes& attrs,
                        std::vector<std::string>& outputs) {
    if (!normalize_domain(n.domain()).empty()) return false;
    const std::string& op = n.op_type();
    std::string node = describe(n);
    attrs.erase("consumed_inputs");  // opset 1-5 memory hint, meaningless here
    if (opset_ < 13 && (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax"))
      return legacy_softmax(n, name, inputs, attrs, outputs);
    if (op == "BatchNormalization") {
      if (opset_ < 7) attrs.erase("is_test");
      check(opset_ >= 9 || attrs.get_int("spatial", 1) == 1, ErrorCode::Unsupported,
            node + ": spatial=0 (per-activation statistics) is not supported");
      attrs.erase("spatial");
    }
    // Resize-10 takes (X, scales) and rounds nearest neighbours by the direction of the
    // scaling (ONNX Runtime: floor up, ceil down); minfer has the opset-11 form only.
    check(op != "Resize" || opset_ >= 11, ErrorCode::Unsupported,
          node + ": Resize before opset 11 (scales as input 1) is not supported; re-export the "
                 "model at opset 11 or later");
    if (op == "Dropout" && opset_ < 7) attrs.erase("is_test");
    if (op == "Dropout" && opset_ < 12 && outputs.size() > 1 && !outputs[1].empty())
      return legacy_dropout_mask(n, outputs);
    if (opset_ < 7 && attrs.has("broadcast")) {
      // Old explicit broadcasting: without `axis` it is suffix matching, which numpy-style
      // broadcasting covers; with `axis` it means something numpy does not.
      check(!attrs.has("axis") || op == "Gemm", ErrorCode::Unsupported,
            node + ": legacy broadcast with an axis attribute (opset < 7) is not supported");
      attrs.erase("broadcast");
    }
    if (op == "Concat" && opset_ < 4 && !attrs.has("axis"))
      attrs.set("axis", int64_t{1});  // Concat-1: axis was optional, default 1
    if (op == "Pad" && opset_ < 2 && attrs.has("paddings")) {  // Pad-1's name for pads
      attrs.set("pads", attrs.get_ints("paddings"));
      attrs.erase("paddings");
    }
    if (op == "Reshape" && opset_ < 5 && attrs.has("shape")) {
      auto dims = attrs.get_ints("shape");
      Value* c = g_.add_constant(
          unique_name((name.empty() ? std::string("reshape") : name) + "/shape"),
          Tensor::from_vector<int64_t>(dims, Shape{static_cast<int64_t>(dims.size())}));
      attrs.erase("shape");
      inputs.resize(1);
      inputs.push_back(c);
    }
    return false;
  }

  void read_node(const onnx::NodeProto& n) {
    std::string node = describe(n);
    std::vector<Value*> inputs;
    for (const auto& in : n.input()) inputs.push_back(input_value(in, node));
    std::vector<std::string> outputs(n.output().begin(), n.output().end());
    Attributes attrs = read_attributes(n);
    if (normalize_legacy(n, n.name(), inputs, attrs, outputs)) return;
    detail::ImportedNode imported{
        normalize_domain(n.domain()), n.op_type(), n.name(), inputs, attrs, outputs, node};
    if (detail::expand_qoperator(g_, imported,
                                 [this](const std::string& base) { return unique_name(base); }))
      return;
    g_.add_node_named(n.op_type(), n.name(), inputs, outputs, std::move(attrs),
                      normalize_domain(n.domain()));
  }

  void read_outputs() {
    std::set<std::string> seen;
    for (const auto& out : model_.graph().output()) {
      check(seen.insert(out.name()).second, ErrorCode::InvalidModel,
            src_ + ": graph output '" + out.name() + "' is listed twice");
      Value* v = g_.find_value(out.name());
      check(v && (v->producer || v->is_graph_input || v->is_constant()), ErrorCode::InvalidModel,
            src_ + ": graph output '" + out.name() + "' is not produced by any node");
      g_.add_output(v);
    }
  }

  onnx::ModelProto& model_;
  std::string base_dir_, src_;
  Graph g_;
  int64_t opset_ = 0;
  std::set<std::string> produced_;  // every name some node writes
  std::set<std::string> consumed_;  // every name some node or the graph's outputs read
};

}  // namespace

namespace {

Graph import_model(onnx::ModelProto& model, const std::string& base_dir,
                   const std::string& source_name) {
  try {
    return Importer(model, base_dir, source_name).run();
  } catch (const Error& e) {
    // Errors raised by the Graph itself (e.g. a value defined twice) do not know the file.
    std::string msg = e.what();
    if (msg.rfind(source_name + ":", 0) == 0) throw;
    throw Error(e.code(), source_name + ": " + msg);
  }
}

void check_protobuf_size(uint64_t bytes, const std::string& source_name) {
  check(bytes <= static_cast<uint64_t>(INT_MAX), ErrorCode::Unsupported,
        source_name +
            ": a protobuf cannot exceed 2 GiB; keep the weights of such models in "
            "external data files");
}

void check_parsed(bool ok, const std::string& source_name) {
  check(ok, ErrorCode::InvalidModel,
        source_name +
            ": not a valid ONNX model (the protobuf cannot be parsed: truncated or "
            "not an ONNX file)");
}

}  // namespace

Graph parse_onnx(const std::string& bytes, const std::string& base_dir,
                 const std::string& source_name) {
  check_protobuf_size(bytes.size(), source_name);
  onnx::ModelProto model;
  check_parsed(model.ParseFromString(bytes), source_name);
  return import_model(model, base_dir, source_name);
}

Graph load_onnx(const std::string& path) {
  // Parsed from the stream, not from the whole file read into memory first: the weights are
  // then never held three times (file, protobuf, tensors) but at most once and a tensor.
  std::ifstream in = detail::open_for_reading(path, "ONNX model");
  check_protobuf_size(detail::stream_size(in), path);
  onnx::ModelProto model;
  {
    google::protobuf::io::IstreamInputStream stream(&in);
    check_parsed(model.ParseFromZeroCopyStream(&stream), path);
  }
  check(!in.bad(), ErrorCode::InvalidArgument, "cannot read ONNX model '" + path + "'");
  return import_model(model, std::filesystem::path(path).parent_path().string(), path);
}

}  // namespace minfer
