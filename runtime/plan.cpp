#include "runtime/plan.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <new>

#include "minfer/registry.h"
#include "runtime/device_allocation_tally.h"
#include "runtime/device_backend.h"
#include "runtime/memory_planner.h"

namespace minfer {

namespace {

// Plan-time evaluation of nodes whose inputs are all known (shape arithmetic left over at
// opt level 0, Shape of a now-static tensor) is capped so it never does real work.
constexpr int64_t kFoldLimitElements = 1 << 16;

// Longest integer input that can be baked into a plan (a shape vector is far shorter).
constexpr int64_t kShapeLikeMaxElements = 64;

int device_slot(const Device& d) { return d.is_cpu() ? 0 : 1; }

// A copy of a graph input to the device (its source address changes from run to run).
bool is_input_copy(const Plan& plan, const Step& st) {
  return st.kind == Step::Kind::CopyToDevice &&
         plan.slots[st.inputs[0]].kind == Slot::Kind::Input;
}

size_t bytes_of(const Shape& shape, DType dtype) {
  return static_cast<size_t>(shape.numel()) * dtype_size(dtype);
}

class PlanBuilder : public SharedConstants {
 public:
  PlanBuilder(const Graph& g, const SessionOptions& options, int threads, DeviceContext* dctx,
              const PlanEnvironment& env)
      : g_(g),
        options_(options),
        threads_(threads),
        dctx_(dctx),
        backend_(dctx ? &device_backend(options.device) : nullptr),
        env_(env) {}

  // SharedConstants, for the kernels' prepare: the session's store, within the memory limit.
  std::shared_ptr<const void> find_or_make(
      const Node& node, const Device& device, const std::string& key, size_t bytes,
      const std::function<std::shared_ptr<const void>()>& make) override {
    return shared(&node, node.describe(), device, key, bytes, make);
  }

  std::unique_ptr<Plan> build(const std::vector<Shape>& input_shapes,
                              const std::vector<const Tensor*>& input_values) {
    plan_ = std::make_unique<Plan>();
    plan_->device_context = dctx_;
    plan_->backend = backend_;
    plan_->host_buffers = env_.host_buffers;
    plan_->observe_outputs = env_.observe_outputs && !dctx_;
    what_ = "graph '" + g_.name + "' with input shapes";
    for (const Shape& s : input_shapes) what_ += " " + s.to_string();
    for (size_t i = 0; i < g_.inputs().size(); ++i) {
      const Value* v = g_.inputs()[i];
      if (i < input_values.size() && input_values[i]) {
        plan_->folded.push_back(std::make_unique<Tensor>(input_values[i]->clone()));
        slot_of_[v] = constant_slot(plan_->folded.back().get(), v->name);
        continue;
      }
      may_need_values_ |= is_shape_like_input(v->dtype, input_shapes[i]);
      Slot s;
      s.kind = Slot::Kind::Input;
      s.dtype = v->dtype;
      s.shape = input_shapes[i];
      s.input_index = static_cast<int>(i);
      s.name = v->name;
      slot_of_[v] = add_slot(std::move(s));
    }
    for (const Node* n : g_.topo_order()) plan_node(*n);
    for (const Value* v : g_.outputs()) plan_->output_slots.push_back(host_slot(slot_for(v)));
    find_output_sources();
    assign_memory();
    decide_cuda_graph();
    check_budget(input_shapes);
    return std::move(plan_);
  }

 private:
  // The entry of the session's shared constants (or a plain make() outside a session), after
  // checking that making it stays within the device's limit.
  std::shared_ptr<const void> shared(const void* owner, const std::string& owner_name,
                                     const Device& device, const std::string& key, size_t bytes,
                                     const std::function<std::shared_ptr<const void>()>& make) {
    if (!env_.constants) return make();
    auto admit = [&](size_t more) {
      MemoryNeeds needs = weight_needs(device);
      needs.weights += more;
      check_memory_needs(needs, limit_for(device), env_.limit_source,
                         "packing the weights of " + owner_name + " for " + what_);
    };
    return env_.constants->find_or_make(owner, device, key, bytes, admit, make);
  }

  // What the session holds on `device` now (weights and constants), as a start of the needs.
  MemoryNeeds weight_needs(const Device& device) const {
    MemoryNeeds needs;
    needs.device = device;
    if (env_.constants) needs.weights = env_.constants->live_bytes(device);
    if (device.is_cpu()) needs.weights += env_.graph_constant_bytes;
    if (!device.is_cpu() && env_.device_limit == 0) needs.weights = 0;  // free memory counts it
    return needs;
  }

  size_t limit_for(const Device& device) const {
    if (device.is_cpu()) return env_.host_limit;
    return env_.device_limit ? env_.device_limit : backend_->device_free_memory(*dctx_);
  }

  // One tensor alone larger than the limit is refused before its kernel is prepared (a kernel
  // may size tables by its output).
  void note_tensor(const std::string& name, const TensorInfo& t, const Device& device,
                   const Node& n) {
    const size_t bytes = bytes_of(t.shape, t.dtype);
    MemoryNeeds& l = largest_[device_slot(device)];
    if (bytes > l.largest_tensor) {
      l.largest_tensor = bytes;
      l.largest_name = name;
      l.largest_node = dtype_name(t.dtype) + t.shape.to_string() + ", output of " + n.describe();
    }
    MemoryNeeds needs = weight_needs(device);
    needs.arena = bytes;
    needs.largest_tensor = bytes;
    needs.largest_name = name;
    needs.largest_node = l.largest_name == name ? l.largest_node : n.describe();
    check_memory_needs(needs, limit_for(device), env_.limit_source, "one tensor of " + what_);
  }

  // The whole plan: weights, arena and workspace, inputs and outputs, on each device.
  void check_budget(const std::vector<Shape>& input_shapes) {
    MemoryNeeds host = weight_needs(Device::cpu());
    host.arena = plan_->arena_bytes[0];
    for (size_t i = 0; i < input_shapes.size(); ++i)
      host.io += bytes_of(input_shapes[i], g_.inputs()[i]->dtype);
    if (!plan_->observe_outputs)  // (observed outputs are not copied out)
      for (int id : plan_->output_slots)
        host.io += bytes_of(plan_->slots[id].shape, plan_->slots[id].dtype);
    for (const auto& f : plan_->folded) host.weights += f->nbytes();
    host.largest_tensor = largest_[0].largest_tensor;
    host.largest_name = largest_[0].largest_name;
    host.largest_node = largest_[0].largest_node;
    plan_->host_needs = host;
    check_memory_needs(host, env_.host_limit, env_.limit_source, what_);
    if (!dctx_) return;
    MemoryNeeds dev = weight_needs(options_.device);
    dev.arena = plan_->arena_bytes[1];
    dev.largest_tensor = largest_[1].largest_tensor;
    dev.largest_name = largest_[1].largest_name;
    dev.largest_node = largest_[1].largest_node;
    plan_->device_needs = dev;
    check_memory_needs(dev, limit_for(options_.device), env_.limit_source, what_);
  }

  int add_slot(Slot s) {
    plan_->slots.push_back(std::move(s));
    return static_cast<int>(plan_->slots.size()) - 1;
  }

  int constant_slot(const Tensor* t, const std::string& name) {
    Slot s;
    s.kind = Slot::Kind::Constant;
    s.dtype = t->dtype();
    s.shape = t->shape();
    s.constant = t;
    s.name = name;
    return add_slot(std::move(s));
  }

  int slot_for(const Value* v) {
    auto it = slot_of_.find(v);
    if (it != slot_of_.end()) return it->second;
    check(v->is_constant(), ErrorCode::InvalidModel,
          "value '" + v->name + "' is used but never produced");
    int id = constant_slot(&*v->constant, v->name);
    slot_of_[v] = id;
    return id;
  }

  TensorInfo info_of(int slot) const {
    const Slot& s = plan_->slots[slot];
    TensorInfo info;
    info.present = true;
    info.dtype = s.dtype;
    info.shape = s.shape;
    info.constant = s.kind == Slot::Kind::Constant ? s.constant : nullptr;
    return info;
  }

  // Evaluates a node at plan time when its result only depends on what is already known.
  bool try_fold(const Node& n, const std::vector<int>& in, const InferContext& inferred) {
    std::vector<Tensor> outputs;
    if (n.op_type == "Shape" && n.domain.empty()) {
      const Shape& shape = plan_->slots[in[0]].shape;
      int64_t rank = static_cast<int64_t>(shape.rank());
      int64_t start = n.attrs.get_int("start", 0), end = n.attrs.get_int("end", rank);
      if (start < 0) start += rank;
      if (end < 0) end += rank;
      start = std::clamp<int64_t>(start, 0, rank);
      end = std::clamp<int64_t>(end, start, rank);
      std::vector<int64_t> dims(shape.dims().begin() + start, shape.dims().begin() + end);
      outputs.push_back(Tensor::from_vector(dims, Shape{static_cast<int64_t>(dims.size())}));
    } else {
      for (int id : in)
        if (id >= 0 && plan_->slots[id].kind != Slot::Kind::Constant) return false;
      for (const TensorInfo& o : inferred.outputs())
        if (!o.present || !o.shape.is_static() || o.shape.numel() > kFoldLimitElements)
          return false;
      std::vector<Tensor> inputs;
      for (int id : in) inputs.push_back(id >= 0 ? *plan_->slots[id].constant : Tensor());
      const OpSchema& schema = OpRegistry::global().get_op(n.domain, n.op_type);
      outputs = schema.reference(n, inputs);
    }
    for (size_t i = 0; i < n.outputs.size() && i < outputs.size(); ++i) {
      plan_->folded.push_back(std::make_unique<Tensor>(std::move(outputs[i])));
      slot_of_[n.outputs[i]] = constant_slot(plan_->folded.back().get(), n.outputs[i]->name);
    }
    return true;
  }

  void plan_node(const Node& n) {
    const OpSchema& schema = OpRegistry::global().get_op(n.domain, n.op_type);
    std::vector<int> in;
    std::vector<TensorInfo> infos;
    for (const Value* v : n.inputs) {
      in.push_back(v ? slot_for(v) : -1);
      infos.push_back(v ? info_of(in.back()) : TensorInfo{});
    }
    InferContext inferred(n, infos);
    schema.infer(inferred);
    if (try_fold(n, in, inferred)) return;

    PrepareContext pctx{n, infos, inferred.outputs()};
    pctx.threads = threads_;
    for (size_t i = 0; i < pctx.outputs.size(); ++i) {
      const TensorInfo& o = pctx.outputs[i];
      if (!(o.present && o.shape.is_static()) && may_need_values_) throw NeedsInputValues{};
      check(o.present && o.shape.is_static(), ErrorCode::Unsupported,
            n.describe() + ": the shape of output '" + n.outputs[i]->name +
                "' depends on data only known while running (" +
                (o.present ? o.shape.to_string() : "unknown") +
                "); minfer needs static shapes once the inputs' shapes are known");
    }

    // Device: the session's device where a kernel there accepts the node, else the CPU.
    const KernelDef* def = nullptr;
    Device device = Device::cpu();
    if (!options_.device.is_cpu()) {
      pctx.device = options_.device;
      pctx.device_context = dctx_;
      def = OpRegistry::global().find_kernel(pctx, Device::Type::CUDA);
      if (def) device = options_.device;
    }
    if (!def) {
      pctx.device = Device::cpu();
      pctx.device_context = nullptr;
      def = OpRegistry::global().find_kernel(pctx, Device::Type::CPU);
    }
    // Packed weights are shared with other plans only when they come from the graph's own
    // constants (not from values folded in this plan, which another plan may not share).
    bool graph_constants = true;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] >= 0 && plan_->slots[in[i]].kind == Slot::Kind::Constant)
        graph_constants &= n.inputs[i]->is_constant() &&
                           plan_->slots[in[i]].constant == &*n.inputs[i]->constant;
    pctx.shared = graph_constants && env_.constants ? this : nullptr;
    for (size_t i = 0; i < pctx.outputs.size(); ++i)  // before prepare, which may size by them
      note_tensor(n.outputs[i]->name, pctx.outputs[i], device, n);
    Step step;
    step.node = &n;
    step.device = device;
    if (def) {
      step.kernel = def->create();
      step.kernel_name = def->name.empty() ? "kernel" : def->name;
      step.graph_capturable = def->graph_capturable && !device.is_cpu();
      step.in_place = def->in_place && plan_->observe_outputs;
      step.aliases_input = def->aliases_input;
    } else {
      step.kernel = make_reference_kernel(schema);
      step.kernel_name = "reference";
    }
    step.kernel->prepare(pctx);
    if (std::string v = step.kernel->variant(); !v.empty()) step.kernel_name += " [" + v + "]";
    ++plan_->stats.kernels[step.kernel_name];
    step.workspace_bytes = pctx.workspace_bytes;
    step.overwrites_input = pctx.overwrites_input;
    if (options_.verbose)
      std::fprintf(stderr, "[minfer] %-40s on %s with %s\n", n.describe().c_str(),
                   device.to_string().c_str(), step.kernel_name.c_str());

    for (size_t i = 0; i < in.size(); ++i) {
      const bool packed = std::find(pctx.packed_inputs.begin(), pctx.packed_inputs.end(),
                                    static_cast<int>(i)) != pctx.packed_inputs.end() &&
                          in[i] >= 0 && plan_->slots[in[i]].kind == Slot::Kind::Constant;
      step.inputs.push_back(in[i] < 0 ? -1 : packed ? in[i] : on_device(in[i], device));
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      Slot s;
      s.kind = Slot::Kind::Arena;
      s.dtype = pctx.outputs[i].dtype;
      s.shape = pctx.outputs[i].shape;
      s.device = device;
      s.name = n.outputs[i]->name;
      int id = add_slot(std::move(s));
      slot_of_[n.outputs[i]] = id;
      step.outputs.push_back(id);
    }
    plan_->steps.push_back(std::move(step));
  }

  // The slot holding `id`'s data on `device`, adding a copy step the first time.
  int on_device(int id, const Device& device) {
    Slot& s = plan_->slots[id];
    if (s.kind == Slot::Kind::Input || s.kind == Slot::Kind::Constant) {
      if (device.is_cpu()) return id;
      if (s.kind == Slot::Kind::Constant) return upload_constant(id);
    } else if (s.device == device) {
      return id;
    }
    auto key = std::make_pair(id, device_slot(device));
    if (auto it = mirrors_.find(key); it != mirrors_.end()) return it->second;
    Slot copy = plan_->slots[id];
    copy.kind = Slot::Kind::Arena;
    copy.device = device;
    copy.name += device.is_cpu() ? "@cpu" : "@cuda";
    int copy_id = add_slot(std::move(copy));
    Step step;
    step.kind = device.is_cpu() ? Step::Kind::CopyToHost : Step::Kind::CopyToDevice;
    step.device = device;
    step.inputs = {id};
    step.outputs = {copy_id};
    plan_->steps.push_back(std::move(step));
    mirrors_[key] = copy_id;
    return copy_id;
  }

  int upload_constant(int id) {
    auto key = std::make_pair(id, 1);
    if (auto it = mirrors_.find(key); it != mirrors_.end()) return it->second;
    Slot copy = plan_->slots[id];
    const Tensor& t = *copy.constant;
    copy.device = options_.device;
    DeviceContext* dc = dctx_;
    DeviceBackend* backend = backend_;
    auto upload = [&]() -> std::shared_ptr<const void> {
      void* p = backend->device_alloc(*dc, std::max<size_t>(t.nbytes(), 1));
      std::shared_ptr<const void> buffer(
          p, [dc, backend](const void* q) { backend->device_free(*dc, const_cast<void*>(q)); });
      if (t.nbytes()) backend->copy_to_device(*dc, p, t.raw(), t.nbytes());
      return buffer;
    };
    // Graph constants are uploaded once per session; values folded in this plan, per plan.
    const Value* owner = nullptr;
    for (const auto& [v, slot] : slot_of_)
      if (slot == id && v->is_constant() && &*v->constant == copy.constant) owner = v;
    std::shared_ptr<const void> buffer =
        owner ? shared(owner, "constant '" + owner->name + "'", options_.device, "upload",
                       std::max<size_t>(t.nbytes(), 1), upload)
              : upload();
    copy.device_constant = buffer.get();
    plan_->uploads.push_back(std::move(buffer));
    int copy_id = add_slot(std::move(copy));
    mirrors_[key] = copy_id;
    return copy_id;
  }

  int host_slot(int id) { return on_device(id, Device::cpu()); }

  // Per graph output, the device slot its host copy is made from (Plan::output_sources).
  void find_output_sources() {
    plan_->output_sources.assign(plan_->output_slots.size(), -1);
    for (const Step& st : plan_->steps)
      if (st.kind == Step::Kind::CopyToHost)
        for (size_t o = 0; o < plan_->output_slots.size(); ++o)
          if (plan_->output_slots[o] == st.outputs[0]) plan_->output_sources[o] = st.inputs[0];
  }

  // Which inputs CPU kernels read, and whether the plan's GPU work can be one CUDA graph: every
  // kernel capturable on the GPU, no copy to the device but of graph inputs (done before the
  // graph is launched, since their host addresses change from run to run).
  void decide_cuda_graph() {
    plan_->input_read_on_cpu.assign(g_.inputs().size(), false);
    bool graph = options_.cuda_graphs && dctx_ != nullptr;
    int kernels = 0;
    for (const Step& st : plan_->steps) {
      if (st.kind == Step::Kind::Kernel) {
        ++kernels;
        graph &= st.graph_capturable;
        for (int id : st.inputs)
          if (id >= 0 && plan_->slots[id].kind == Slot::Kind::Input && st.device.is_cpu())
            plan_->input_read_on_cpu[plan_->slots[id].input_index] = true;
      } else if (st.kind == Step::Kind::CopyToDevice) {
        graph &= is_input_copy(*plan_, st);
      }
    }
    plan_->use_cuda_graph = graph && kernels > 0;
    plan_->stats.cuda_graph = plan_->use_cuda_graph;
  }

  // The slot whose buffer each slot uses: its own, or for the output of an in-place step, that
  // of an input of its shape and dtype read last there (a calibration run then holds two of
  // ResNet-50's largest activations at a residual Add instead of three), or for the output of
  // an aliasing step (Reshape), that of its input 0 read last there, whatever its shape (no
  // copy: ViT-B's 61 Reshapes), or for the output of a step that overwrites an input (a conv's
  // residual), that input's where it is read last there and by no other of the step's inputs.
  // `last` of that buffer's first slot grows to cover the slots sharing it.
  std::vector<int> share_in_place(const std::vector<int>& first, std::vector<int>& last) const {
    std::vector<int> buffer_of(plan_->slots.size());
    for (size_t id = 0; id < buffer_of.size(); ++id) buffer_of[id] = static_cast<int>(id);
    for (int i = 0; i < static_cast<int>(plan_->steps.size()); ++i) {
      const Step& st = plan_->steps[i];
      const bool overwrites = st.overwrites_input >= 0 &&
                              st.overwrites_input < static_cast<int>(st.inputs.size());
      if (!(st.in_place || st.aliases_input || overwrites) || st.outputs.size() != 1) continue;
      const int out = st.outputs[0];
      const Slot& o = plan_->slots[out];
      if (o.kind != Slot::Kind::Arena || first[out] != i) continue;
      // The inputs whose buffer the output may take: [c0, c1).
      size_t c0 = 0, c1 = st.inputs.size();
      if (st.aliases_input) {
        c1 = std::min<size_t>(1, c1);
      } else if (!st.in_place) {
        c0 = static_cast<size_t>(st.overwrites_input);
        c1 = c0 + 1;
        // (The same tensor as another input, say conv(x) + x, is read elsewhere too.)
        if (std::count(st.inputs.begin(), st.inputs.end(), st.inputs[c0]) > 1) continue;
      }
      for (size_t c = c0; c < c1; ++c) {
        const int in = st.inputs[c];
        if (in < 0 || last[in] != i) continue;
        const Slot& s = plan_->slots[in];
        const bool fits = st.aliases_input ? s.shape.numel() == o.shape.numel()
                                           : s.shape.dims() == o.shape.dims();
        if (s.kind != Slot::Kind::Arena || s.device != o.device || s.dtype != o.dtype || !fits)
          continue;
        const int buffer = buffer_of[in];
        buffer_of[out] = buffer;
        last[buffer] = std::max(last[buffer], last[out]);
        break;
      }
    }
    return buffer_of;
  }

  void assign_memory() {
    const int n_steps = static_cast<int>(plan_->steps.size());
    // Lifetime of every arena slot: from its producing step to its last reader. Graph
    // outputs stay live to the end, since they are copied out after the last step.
    std::vector<int> first(plan_->slots.size(), -1), last(plan_->slots.size(), -1);
    for (int i = 0; i < n_steps; ++i) {
      for (int id : plan_->steps[i].outputs) first[id] = last[id] = i;
      for (int id : plan_->steps[i].inputs)
        if (id >= 0) last[id] = i;
    }
    if (plan_->observe_outputs) {
      plan_->outputs_after_step.assign(plan_->steps.size(), {});
      for (size_t o = 0; o < plan_->output_slots.size(); ++o)
        if (first[plan_->output_slots[o]] >= 0)
          plan_->outputs_after_step[first[plan_->output_slots[o]]].push_back(int(o));
    } else {
      for (int id : plan_->output_slots) last[id] = n_steps;
    }
    const std::vector<int> buffer_of = share_in_place(first, last);
    for (int dev = 0; dev < 2; ++dev) {
      std::vector<BufferRequest> requests;
      std::vector<std::pair<int, bool>> owners;  // (slot or step id, is_workspace)
      for (size_t id = 0; id < plan_->slots.size(); ++id) {
        const Slot& s = plan_->slots[id];
        if (s.kind != Slot::Kind::Arena || device_slot(s.device) != dev || first[id] < 0 ||
            buffer_of[id] != static_cast<int>(id))
          continue;
        requests.push_back({static_cast<size_t>(s.shape.numel()) * dtype_size(s.dtype), first[id],
                            last[id]});
        owners.push_back({static_cast<int>(id), false});
      }
      for (int i = 0; i < n_steps; ++i) {
        const Step& st = plan_->steps[i];
        if (st.workspace_bytes == 0 || device_slot(st.device) != dev) continue;
        requests.push_back({st.workspace_bytes, i, i});
        owners.push_back({i, true});
      }
      MemoryPlan mp = plan_memory(requests);
      for (size_t r = 0; r < requests.size(); ++r) {
        if (owners[r].second)
          plan_->steps[owners[r].first].workspace_offset = mp.offsets[r];
        else
          plan_->slots[owners[r].first].offset = mp.offsets[r];
      }
      for (size_t id = 0; id < plan_->slots.size(); ++id)  // outputs written in place
        if (buffer_of[id] != static_cast<int>(id) && device_slot(plan_->slots[id].device) == dev)
          plan_->slots[id].offset = plan_->slots[buffer_of[id]].offset;
      plan_->arena_bytes[dev] = mp.arena_bytes;
      plan_->stats.arena_bytes += mp.arena_bytes;
      plan_->stats.naive_bytes += mp.naive_bytes;
    }
    plan_->stats.node_count = g_.node_count();
  }

  const Graph& g_;
  const SessionOptions& options_;
  int threads_;
  DeviceContext* dctx_;
  DeviceBackend* backend_;  // dctx_'s
  const PlanEnvironment& env_;
  std::string what_;          // "graph 'g' with input shapes [1,3,224,224]", for errors
  MemoryNeeds largest_[2];    // per device: the largest tensor so far
  std::unique_ptr<Plan> plan_;
  std::map<const Value*, int> slot_of_;
  std::map<std::pair<int, int>, int> mirrors_;
  bool may_need_values_ = false;  // a shape-like input was left unknown
};

}  // namespace

bool is_shape_like_input(DType dtype, const Shape& shape) {
  return (dtype == DType::i64 || dtype == DType::i32) && shape.is_static() &&
         shape.numel() <= kShapeLikeMaxElements;
}

// The caller's GPU buffers that a graph plan's run reads and writes in place: the graph inputs
// (for the input copies' arena slots) and the outputs (for their device source slots); empty
// when the arena and its copies are used.
struct DeviceBinding {
  std::vector<const void*> inputs, outputs;
  bool operator==(const DeviceBinding&) const = default;
};

// What one run needs that must not be shared with a concurrent run.
struct ExecContext {
  void* arena[2] = {nullptr, nullptr};
  bool pinned_host_arena = false;       // the host arena is page-locked (CUDA graph plans)
  bool pooled_host_arena = false;       // arena[0] is lent by the plan's host_buffers per run
  BufferPool::Buffer lent;              // what host_buffers lent for the current run
  void* cuda_graph = nullptr;           // captured on this context's first run
  DeviceBinding graph_binding;          // the caller's buffers cuda_graph reads and writes
  int rebinds = 0;                      // captures for other buffers (see bind_device_buffers)
  DeviceContext* device_context = nullptr;
  DeviceBackend* backend = nullptr;     // device_context's
  std::vector<Tensor> tensors;          // one per slot: views into the arenas or constants
  std::vector<RunContext> run_contexts;  // one per step, pointing into `tensors`

  ~ExecContext() {
    if (cuda_graph) backend->destroy_graph(cuda_graph);
    if (pinned_host_arena)
      backend->pinned_free(*device_context, arena[0]);
    else if (!pooled_host_arena && arena[0])
      ::operator delete(arena[0], std::align_val_t(kArenaAlignment));
    if (arena[1] && device_context) backend->device_free(*device_context, arena[1]);
  }

  size_t owned_bytes(const Plan& plan) const {
    return (pooled_host_arena ? 0 : plan.arena_bytes[0]) + (arena[1] ? plan.arena_bytes[1] : 0);
  }
};

namespace {
// Points the context's views of host arena tensors and host workspaces at `base`.
void bind_host_arena(const Plan& plan, ExecContext& ctx, void* base) {
  ctx.arena[0] = nullptr;  // set once every view points at `base` (a view may throw)
  char* b = static_cast<char*>(base);
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& s = plan.slots[i];
    if (s.kind == Slot::Kind::Arena && s.device.is_cpu())
      ctx.tensors[i] = Tensor::view(b + s.offset, s.dtype, s.shape, s.device);
  }
  for (size_t i = 0; i < plan.steps.size(); ++i)
    if (plan.steps[i].workspace_bytes && plan.steps[i].device.is_cpu())
      ctx.run_contexts[i].workspace = b + plan.steps[i].workspace_offset;
  ctx.arena[0] = base;
}

std::unique_ptr<ExecContext> make_context(Plan& plan) {
  auto ctx = std::make_unique<ExecContext>();
  ctx->device_context = plan.device_context;
  ctx->backend = plan.backend;
  size_t cpu_bytes = std::max<size_t>(plan.arena_bytes[0], kArenaAlignment);
  if (plan.use_cuda_graph) {
    // The graph copies the outputs into the host arena: it must be page-locked for that, and
    // stay at the address the graph was captured with.
    ctx->arena[0] = plan.backend->pinned_alloc(*plan.device_context, cpu_bytes);
    ctx->pinned_host_arena = true;
  } else if (plan.host_buffers) {
    ctx->pooled_host_arena = true;  // bound to a lent buffer per run
  } else {
    try {
      ctx->arena[0] = ::operator new(cpu_bytes, std::align_val_t(kArenaAlignment));
    } catch (const std::bad_alloc&) {
      throw Error(ErrorCode::OutOfMemory,
                  "cannot allocate an arena of " + memory_size(cpu_bytes) + " for a run");
    }
  }
  if (plan.arena_bytes[1])
    ctx->arena[1] = plan.backend->device_alloc(*plan.device_context, plan.arena_bytes[1]);
  ctx->tensors.resize(plan.slots.size());
  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& s = plan.slots[i];
    if (s.kind == Slot::Kind::Arena) {
      char* base = static_cast<char*>(ctx->arena[device_slot(s.device)]);
      if (base)  // (a pooled host arena is bound per run)
        ctx->tensors[i] = Tensor::view(base + s.offset, s.dtype, s.shape, s.device);
    } else if (s.kind == Slot::Kind::Constant) {
      ctx->tensors[i] =
          s.device_constant
              ? Tensor::view(const_cast<void*>(s.device_constant), s.dtype, s.shape, s.device)
              : *s.constant;
    }
  }
  for (const Step& st : plan.steps) {
    RunContext rc;
    for (int id : st.inputs) rc.inputs.push_back(id >= 0 ? &ctx->tensors[id] : nullptr);
    for (int id : st.outputs) rc.outputs.push_back(&ctx->tensors[id]);
    if (st.workspace_bytes && ctx->arena[device_slot(st.device)])
      rc.workspace = static_cast<char*>(ctx->arena[device_slot(st.device)]) + st.workspace_offset;
    rc.device_context = st.device.is_cpu() ? nullptr : plan.device_context;
    ctx->run_contexts.push_back(std::move(rc));
  }
  return ctx;
}
}  // namespace

std::unique_ptr<ExecContext> Plan::acquire() {
  {
    std::lock_guard<std::mutex> lock(pool_mutex_);
    if (!pool_.empty()) {
      auto ctx = std::move(pool_.back());
      pool_.pop_back();
      return ctx;
    }
  }
  std::unique_ptr<ExecContext> ctx = make_context(*this);
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.reserve(++contexts_);  // room for every context, so that release() never allocates
  return ctx;
}

void Plan::release(std::unique_ptr<ExecContext> ctx) {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  pool_.push_back(std::move(ctx));
}

void Plan::trim() {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  contexts_ -= pool_.size();
  for (auto& c : pool_) c.reset();  // keeps pool_'s capacity for contexts still out
  pool_.clear();
}

size_t Plan::idle_context_bytes() const {
  std::lock_guard<std::mutex> lock(pool_mutex_);
  size_t total = 0;
  for (const auto& c : pool_) total += c->owned_bytes(*this);
  return total;
}

Plan::~Plan() { pool_.clear(); }

std::unique_ptr<Plan> build_plan(const Graph& g, const std::vector<Shape>& input_shapes,
                                 const std::vector<const Tensor*>& input_values,
                                 const SessionOptions& options, int threads,
                                 DeviceContext* device_context, const PlanEnvironment& env) {
  DeviceAllocationTally tally;  // what kernels upload outside the shared constants
  std::unique_ptr<Plan> plan =
      PlanBuilder(g, options, threads, device_context, env).build(input_shapes, input_values);
  // The session's shared weights on the device (this plan's and its siblings'), what this
  // plan uploaded for itself, and one run's arena.
  const size_t shared = env.constants && device_context
                            ? env.constants->live_bytes(options.device) : 0;
  plan->stats.device_bytes = std::max(tally.bytes(), shared) + plan->arena_bytes[1];
  return plan;
}

namespace {

void run_step(const Plan& plan, const Step& st, RunContext& rc) {
  switch (st.kind) {
    case Step::Kind::Kernel: st.kernel->run(rc); break;
    case Step::Kind::CopyToDevice:
      // A graph input given as a device tensor is copied on the device.
      if (rc.inputs[0]->device().is_cpu())
        plan.backend->copy_to_device(*plan.device_context, rc.outputs[0]->raw(),
                                     rc.inputs[0]->raw(), rc.inputs[0]->nbytes());
      else
        plan.backend->copy_on_device(*plan.device_context, rc.outputs[0]->raw(),
                                     rc.inputs[0]->raw(), rc.inputs[0]->nbytes());
      break;
    case Step::Kind::CopyToHost:
      plan.backend->copy_to_host(*plan.device_context, rc.outputs[0]->raw(), rc.inputs[0]->raw(),
                                 rc.inputs[0]->nbytes());
      break;
  }
}

// Captures every step but the input copies (and, with the outputs bound to the caller's GPU
// memory, the copies of the outputs to the host) as this context's CUDA graph; false (and the
// plan marked, so no later run tries again) when some step cannot be captured.
bool capture_graph(Plan& plan, ExecContext& ctx) {
  DeviceContext& dc = *plan.device_context;
  const bool outputs_bound = !ctx.graph_binding.outputs.empty();
  try {
    plan.backend->begin_capture(dc);
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      const Step& st = plan.steps[i];
      if (is_input_copy(plan, st) || (outputs_bound && st.kind == Step::Kind::CopyToHost))
        continue;
      run_step(plan, st, ctx.run_contexts[i]);
    }
    ctx.cuda_graph = plan.backend->end_capture(dc);
    return true;
  } catch (...) {  // the step-by-step run that follows reports any real error
    plan.backend->abort_capture(dc);
    plan.capture_failed = true;
    plan.stats.cuda_graph = false;
    return false;
  }
}

}  // namespace

namespace {
thread_local StepObserver* t_observer = nullptr;  // see ObserveSteps

// A pipeline that keeps its data on the GPU pays no copy: a graph plan's run whose inputs are
// GPU tensors reads them where they are (the arena slots that the input copies fill become
// views of the caller's buffers), and run_into's GPU outputs are written where the caller
// wants them (the outputs' device slots become views of the targets). The context's CUDA graph
// is captured with those buffers and replayed while the same ones come back, as pipelines
// reuse theirs; other buffers mean a new capture, and after kMaxRebinds of those the context
// goes back to the arena and its copies. Buffers must be aligned as the arena's tensors are.
constexpr int kMaxRebinds = 8;

bool bindable_pointer(const Tensor& t) {
  return !t.device().is_cpu() && reinterpret_cast<uintptr_t>(t.raw()) % kArenaAlignment == 0;
}

DeviceBinding wanted_binding(const Plan& plan, const ExecContext& ctx, const RunTargets* targets) {
  DeviceBinding b;
  if (ctx.rebinds > kMaxRebinds) return b;
  for (const Step& st : plan.steps) {
    if (!is_input_copy(plan, st)) continue;
    const Tensor& in = ctx.tensors[st.inputs[0]];
    if (!bindable_pointer(in)) {
      b.inputs.clear();
      break;
    }
    b.inputs.push_back(in.raw());
  }
  if (targets) {
    std::vector<int> sources;
    for (size_t o = 0; o < plan.output_slots.size(); ++o) {
      const int source = plan.output_sources[o];
      // A source that is not an arena slot of its own (an input, a constant, an output twice)
      // keeps the copy.
      if (source < 0 || plan.slots[source].kind != Slot::Kind::Arena ||
          !bindable_pointer(*targets->outputs[o]) ||
          std::find(sources.begin(), sources.end(), source) != sources.end()) {
        b.outputs.clear();
        break;
      }
      sources.push_back(source);
      b.outputs.push_back(targets->outputs[o]->raw());
    }
  }
  for (const Step& st : plan.steps)  // an input copy's slot that is also an output's source
    if (!b.inputs.empty() && !b.outputs.empty() && is_input_copy(plan, st))
      for (int source : plan.output_sources)
        if (source == st.outputs[0]) b.outputs.clear();
  return b;
}

// Points the slot at `data` (the caller's buffer), or back at its place in the device arena.
void point_slot(const Plan& plan, ExecContext& ctx, int id, const void* data) {
  const Slot& s = plan.slots[id];
  void* at = data ? const_cast<void*>(data) : static_cast<char*>(ctx.arena[1]) + s.offset;
  ctx.tensors[id] = Tensor::view(at, s.dtype, s.shape, s.device);
}

// Makes the context read and write `b` (dropping a graph captured for other buffers).
void bind_device_buffers(const Plan& plan, ExecContext& ctx, const DeviceBinding& b) {
  if (b == ctx.graph_binding) return;
  if (ctx.cuda_graph) {
    ctx.backend->destroy_graph(ctx.cuda_graph);
    ctx.cuda_graph = nullptr;
    ++ctx.rebinds;
  }
  size_t next = 0;
  for (const Step& st : plan.steps)
    if (is_input_copy(plan, st))
      point_slot(plan, ctx, st.outputs[0], b.inputs.empty() ? nullptr : b.inputs[next++]);
  for (size_t o = 0; o < plan.output_sources.size(); ++o) {
    const int source = plan.output_sources[o];
    if (source >= 0 && plan.slots[source].kind == Slot::Kind::Arena)
      point_slot(plan, ctx, source, b.outputs.empty() ? nullptr : b.outputs[o]);
  }
  ctx.graph_binding = b;
}
}  // namespace

ObserveSteps::ObserveSteps(StepObserver& observer) : outer_(t_observer) { t_observer = &observer; }
ObserveSteps::~ObserveSteps() { t_observer = outer_; }

std::vector<Tensor> execute_plan(Plan& plan, const std::vector<const Tensor*>& inputs, int threads,
                                 const OutputObserver& observe, const RunTargets* targets,
                                 OutputBuffers* buffers) {
  StepObserver* const observer = t_observer;
  std::unique_ptr<ExecContext> ctx = plan.acquire();
  struct Releaser {  // returns the context and its buffer even when a kernel throws
    Plan& plan;
    std::unique_ptr<ExecContext>& ctx;
    ~Releaser() {
      if (ctx->pooled_host_arena) {
        plan.host_buffers->release(ctx->lent);
        ctx->lent = {};
      }
      plan.release(std::move(ctx));
    }
  } releaser{plan, ctx};
  if (ctx->pooled_host_arena) {
    ctx->lent = plan.host_buffers->acquire(std::max<size_t>(plan.arena_bytes[0], 1));
    if (ctx->lent.data != ctx->arena[0]) bind_host_arena(plan, *ctx, ctx->lent.data);
  }

  for (size_t i = 0; i < plan.slots.size(); ++i) {
    const Slot& s = plan.slots[i];
    if (s.kind != Slot::Kind::Input) continue;
    const Tensor& in = *inputs[s.input_index];
    check(in.device().is_cpu() || !plan.input_read_on_cpu[s.input_index],
          ErrorCode::InvalidArgument,
          "run: input '" + s.name + "' is read by a CPU kernel of this plan; pass it as a CPU "
          "tensor");
    ctx->tensors[i] = Tensor::view(const_cast<void*>(in.raw()), s.dtype, s.shape, in.device());
  }
  for (RunContext& rc : ctx->run_contexts) rc.threads = threads;

  if (plan.observe_outputs) {  // CPU only (build_plan): step by step, outputs seen as made
    check(observe != nullptr, ErrorCode::Internal, "a plan observing outputs needs an observer");
    for (size_t o = 0; o < plan.output_slots.size(); ++o) {  // inputs and constants
      const int id = plan.output_slots[o];
      if (plan.slots[id].kind != Slot::Kind::Arena) observe(o, ctx->tensors[id]);
    }
    for (size_t i = 0; i < plan.steps.size(); ++i) {
      run_step(plan, plan.steps[i], ctx->run_contexts[i]);
      for (int o : plan.outputs_after_step[i])
        observe(size_t(o), ctx->tensors[plan.output_slots[o]]);
    }
    return {};
  }

  DeviceContext* const dc = plan.device_context;
  DeviceBackend* const backend = plan.backend;
  void* const caller_stream = targets && dc ? targets->cuda_stream : nullptr;
  std::unique_lock<std::mutex> stream_lock;
  if (dc) stream_lock = backend->lock_stream(*dc);
  if (caller_stream) backend->wait_for_stream(*dc, caller_stream);
  const bool graph = plan.use_cuda_graph && !plan.capture_failed && !observer;
  // Step by step, the arena and its copies are used (a bound graph plan whose capture failed).
  bind_device_buffers(plan, *ctx, graph ? wanted_binding(plan, *ctx, targets) : DeviceBinding{});
  const bool inputs_bound = !ctx->graph_binding.inputs.empty();
  if (graph && !inputs_bound)  // the input copies first: the graph holds the rest
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (is_input_copy(plan, plan.steps[i]))
        run_step(plan, plan.steps[i], ctx->run_contexts[i]);
  const bool graph_ran = graph && (ctx->cuda_graph || capture_graph(plan, *ctx));
  if (graph_ran) {
    backend->launch_graph(*dc, ctx->cuda_graph);
  } else {
    const bool copied = graph && !inputs_bound;  // the input copies ran above
    bind_device_buffers(plan, *ctx, DeviceBinding{});
    for (size_t i = 0; i < plan.steps.size(); ++i)
      if (!(copied && is_input_copy(plan, plan.steps[i]))) {
        if (observer) observer->before_step(plan, i);
        run_step(plan, plan.steps[i], ctx->run_contexts[i]);
        if (observer) observer->after_step(plan, i);
      }
  }
  const bool outputs_bound = graph_ran && !ctx->graph_binding.outputs.empty();
  // run_into: outputs computed on the device go from there straight into the caller's memory,
  // in stream order; those made on the host are copied once the run is done.
  bool host_made_outputs = false;
  if (targets)
    for (size_t o = 0; o < plan.output_slots.size(); ++o) {
      const int source = plan.output_sources[o];
      const Tensor& to = *targets->outputs[o];  // the caller's memory, given as a view
      if (source >= 0) {
        if (!outputs_bound)  // else the graph wrote it there
          backend->copy_any(*dc, const_cast<void*>(to.raw()), ctx->tensors[source].raw(),
                            to.nbytes());
      } else {
        host_made_outputs = true;
      }
    }
  if (caller_stream) backend->signal_stream(*dc, caller_stream);
  if (stream_lock.owns_lock()) stream_lock.unlock();
  // On a caller's stream, an all-GPU run returns once queued: the stream orders what follows.
  // (A later run of the session goes on the session's stream after it, so the context's
  // buffers may be lent again now.)
  if (caller_stream && graph_ran && !host_made_outputs) return {};
  if (dc) backend->synchronize(*dc);
  if (targets) {
    for (size_t o = 0; o < plan.output_slots.size(); ++o) {
      if (plan.output_sources[o] >= 0) continue;
      const Tensor& from = ctx->tensors[plan.output_slots[o]];
      const Tensor& to = *targets->outputs[o];
      void* const dst = const_cast<void*>(to.raw());  // the caller's memory, given as a view
      if (to.device().is_cpu()) {
        std::memcpy(dst, from.raw(), from.nbytes());
      } else {
        backend->copy_to_device(*dc, dst, from.raw(), from.nbytes());
        backend->synchronize(*dc);
      }
    }
    return {};
  }
  std::vector<Tensor> outputs;
  for (size_t o = 0; o < plan.output_slots.size(); ++o) {
    const Tensor& made = ctx->tensors[plan.output_slots[o]];
    outputs.push_back(buffers ? buffers->copy(o, made) : made.clone());
  }
  return outputs;
}

}  // namespace minfer
