// minfer.Session: load, plan and run a model from Python.
#include <nanobind/stl/filesystem.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include "minfer/profile.h"
#include "python/src/module.h"

#ifdef MINFER_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace minfer::py {

namespace {

Precision parse_precision(const std::string& p) {
  if (p == "fp32") return Precision::fp32;
  if (p == "int8") return Precision::int8;
  if (p == "fp16") return Precision::fp16;
  throw Error(ErrorCode::InvalidArgument,
              "precision must be 'fp32', 'int8' or 'fp16', got '" + p + "'");
}

// Holds the Session through a shared_ptr: close() drops this reference while a run on another
// thread keeps its own, so closing never pulls a model out from under a run.
class PySession {
 public:
  PySession(const std::filesystem::path& model, const std::string& device,
            const std::string& precision, int threads, int opt_level, const std::string& weights,
            std::vector<std::string> disabled_passes, bool cuda_graphs) {
    SessionOptions o;
    o.device = parse_device(device);
    o.precision = parse_precision(precision);
    o.threads = threads;
    o.optimization_level = opt_level;
    o.disabled_passes = std::move(disabled_passes);
    o.cuda_graphs = cuda_graphs;
    model_ = model.string();
    Graph g = load_model(model_, weights);
    nb::gil_scoped_release unlocked;  // optimizing a large model takes a while
    session_ = std::make_shared<const Session>(std::move(g), o);
  }

  nb::dict run(const nb::dict& inputs) const {
    std::shared_ptr<const Session> s = live("run");
    std::vector<InArray> keep;  // holds every array (and its DLPack capsule) through the run
    NamedTensors tensors = to_tensors(inputs, keep);
    NamedTensors outputs;
    {
      nb::gil_scoped_release unlocked;  // `inputs` keeps the arrays alive meanwhile
      wait_for_producers(tensors);
      outputs = s->run(tensors);
    }
    nb::dict result;
    for (const std::string& name : s->output_names())  // graph-output order
      result[name.c_str()] = to_numpy(std::move(outputs.at(name)));
    return result;
  }

  void run_into(const nb::dict& inputs, const nb::dict& outputs) const {
    std::shared_ptr<const Session> s = live("run_into");
    std::vector<InArray> keep;
    NamedTensors in = to_tensors(inputs, keep);
    std::vector<OutArray> keep_out;
    NamedTensors out;
    for (auto [key, value] : outputs) {
      if (!nb::isinstance<nb::str>(key)) throw nb::type_error("run_into: output names must be str");
      const std::string name = nb::cast<std::string>(key);
      OutArray a;
      if (!nb::try_cast(value, a))
        throw nb::type_error(("run_into: output '" + name +
                              "' must be a writable array (NumPy, or any object with "
                              "__dlpack__ or the buffer protocol), got " +
                              std::string(nb::type_name(value.type()).c_str()))
                                 .c_str());
      out[name] = tensor_view(a, name);
      keep_out.push_back(std::move(a));
    }
    nb::gil_scoped_release unlocked;
    wait_for_producers(in);
    wait_for_producers(out, "output");  // its owner's pending work may still read it
    s->run_into(in, out);
  }

  nb::dict profile(const nb::dict& inputs, int runs, int warmup) const {
    std::shared_ptr<const Session> s = live("profile");
    check(runs >= 1 && warmup >= 0, ErrorCode::InvalidArgument,
          "profile: runs must be >= 1 and warmup >= 0");
    std::vector<InArray> keep;
    NamedTensors tensors = to_tensors(inputs, keep);
    RunProfile p;
    MachinePeak peak;
    {
      nb::gil_scoped_release unlocked;
      p = profile_session(*s, tensors, runs, warmup);
      const int threads = s->options().threads > 0 ? s->options().threads : 0;
      peak = measure_peak(s->options().device, threads);
    }
    return profile_dict(p, peak);
  }

  void close() { session_.reset(); }
  bool closed() const { return session_ == nullptr; }
  const std::string& model() const { return model_; }
  std::vector<std::string> input_names() const { return live("input_names")->input_names(); }
  std::vector<std::string> output_names() const { return live("output_names")->output_names(); }
  std::string device() const { return live("device")->options().device.to_string(); }

  // name -> (dtype name, shape with None for symbolic dims)
  nb::dict inputs() const {
    nb::dict d;
    for (const Value* v : live("inputs")->graph().inputs()) {
      nb::list dims;
      for (int64_t x : v->shape.dims())
        dims.append(x < 0 ? nb::object(nb::none()) : nb::object(nb::int_(x)));
      d[v->name.c_str()] = nb::make_tuple(dtype_name(v->dtype), nb::tuple(dims));
    }
    return d;
  }

 private:
  std::shared_ptr<const Session> live(const char* method) const {
    std::shared_ptr<const Session> s = session_;
    check(s != nullptr, ErrorCode::InvalidArgument,
          std::string("Session.") + method + ": the session for '" + model_ +
              "' is closed; create a new minfer.Session");
    return s;
  }

  NamedTensors to_tensors(const nb::dict& inputs, std::vector<InArray>& keep) const {
    NamedTensors tensors;
    for (auto [key, value] : inputs) {
      if (!nb::isinstance<nb::str>(key)) throw nb::type_error("run: input names must be str");
      const std::string name = nb::cast<std::string>(key);
      InArray a;
      if (!nb::try_cast(value, a))
        throw nb::type_error(("run: input '" + name +
                              "' must be an array (NumPy, or any "
                              "object with __dlpack__ or the buffer protocol), got " +
                              std::string(nb::type_name(value.type()).c_str()))
                                 .c_str());
      tensors[name] = tensor_view(a, name);
      keep.push_back(std::move(a));
    }
    return tensors;
  }

  // DLPack import here passes no stream, so a GPU array's producer (PyTorch on its own stream,
  // say) may still be writing it; minfer's stream does not wait on other streams. Waiting for
  // the device is the simple correct order. (Written for CUDA builds; untested on a GPU.)
  static void wait_for_producers(const NamedTensors& tensors, const char* what = "input") {
#ifdef MINFER_WITH_CUDA
    for (const auto& [name, t] : tensors)
      if (!t.device().is_cpu()) {
        int current = 0;
        cudaError_t status = cudaGetDevice(&current);
        if (status == cudaSuccess) status = cudaSetDevice(t.device().index);
        if (status == cudaSuccess) status = cudaDeviceSynchronize();
        cudaSetDevice(current);
        check(status == cudaSuccess, ErrorCode::Device,
              std::string("run: waiting for the GPU that holds ") + what + " '" + name +
                  "' failed: " + cudaGetErrorString(status));
      }
#else
    (void)tensors, (void)what;
#endif
  }

  static nb::dict profile_dict(const RunProfile& p, const MachinePeak& peak) {
    const double total = p.steps_ms();
    nb::list steps;
    for (const StepProfile& st : p.steps) {
      nb::dict d;
      d["node"] = st.node;
      d["op"] = st.op;
      d["fused"] = st.fused;
      d["kernel"] = st.kernel;
      d["device"] = st.device;
      nb::list ins, outs;
      for (const Shape& s : st.input_shapes) ins.append(nb::cast(s.dims()));
      for (const Shape& s : st.output_shapes) outs.append(nb::cast(s.dims()));
      d["input_shapes"] = ins;
      d["output_shapes"] = outs;
      d["ms"] = st.ms;
      d["mean_ms"] = st.mean_ms;
      d["share"] = total > 0 ? st.ms / total : 0.0;
      d["flops"] = st.flops;
      d["bytes"] = st.bytes;
      const double s = st.ms / 1000;
      d["gflops"] = s > 0 ? st.flops / s / 1e9 : 0.0;
      d["gbps"] = s > 0 ? st.bytes / s / 1e9 : 0.0;
      const double attainable = roofline_gflops(peak, st.flops, st.bytes);
      d["roofline_pct"] = attainable > 0 && s > 0 ? 100 * (st.flops / s / 1e9) / attainable : 0.0;
      steps.append(d);
    }
    nb::dict pk;
    pk["gflops"] = peak.gflops;
    pk["gbps"] = peak.gbps;
    pk["method"] = peak.method;
    nb::dict r;
    r["runs"] = p.runs;
    r["run_ms"] = p.run_ms;
    r["steps_ms"] = total;
    r["run_mean_ms"] = p.run_mean_ms;
    r["steps_mean_ms"] = p.steps_mean_ms();
    r["peak"] = pk;
    r["steps"] = steps;
    return r;
  }

  std::string model_;
  std::shared_ptr<const Session> session_;
};

}  // namespace

void register_session(nb::module_& m) {
  nb::class_<PySession>(m, "Session",
                        "A model loaded, optimized and planned for one device. Safe to run from "
                        "several threads at once; runs release the GIL.")
      .def(nb::init<const std::filesystem::path&, const std::string&, const std::string&, int, int,
                    const std::string&, std::vector<std::string>, bool>(),
           nb::arg("model"), nb::kw_only(), nb::arg("device") = "cpu",
           nb::arg("precision") = "fp32", nb::arg("threads") = 0, nb::arg("opt_level") = 2,
           nb::arg("weights") = "", nb::arg("disabled_passes") = std::vector<std::string>{},
           nb::arg("cuda_graphs") = true,
           "Loads `model`: an ONNX file path or a built-in model name (see minfer.models()).\n"
           "device: 'cpu', 'cuda' or 'cuda:N'. precision: 'fp32', 'int8' for a quantized\n"
           "model (see minfer.quantize), or 'fp16' (CUDA only).\n"
           "threads: 0 = all cores. opt_level: 0..3.\n"
           "weights: a .safetensors file for a built-in model (default: seeded weights).")
      .def("run", &PySession::run, nb::arg("inputs"),
           "Runs the model on {input name: array} and returns {output name: numpy.ndarray}.\n"
           "Arrays may be NumPy arrays or any DLPack object (a CUDA tensor on a CUDA session is\n"
           "read on the device, once the GPU has finished its pending work). They must have the\n"
           "model's dtype and shape and be C-contiguous; they are read in place, never copied.\n"
           "Raises minfer.Error.")
      .def("run_into", &PySession::run_into, nb::arg("inputs"), nb::arg("outputs"),
           "Runs the model on {input name: array} and writes each output into the writable\n"
           "array given for it in {output name: array}, of the output's dtype and shape: NumPy,\n"
           "or any DLPack object (on a CUDA session a CUDA tensor, such as a PyTorch one, is\n"
           "written on the device: data that stays on the GPU is never copied through the\n"
           "host). Returns when the outputs are written. Raises minfer.Error.")
      .def("profile", &PySession::profile, nb::arg("inputs"), nb::kw_only(), nb::arg("runs") = 10,
           nb::arg("warmup") = 2,
           "Times each plan step over `runs` runs (step by step, no CUDA graph) and returns a\n"
           "dict: run_ms and steps_ms (medians), run_mean_ms and steps_mean_ms, peak (the\n"
           "roofline, measured once per process) and steps, each with node, op, fused, kernel,\n"
           "shapes, ms (median), mean_ms, share, flops, bytes, gflops, gbps and roofline_pct.")
      .def("close", &PySession::close,
           "Releases the model; later calls raise minfer.Error. Runs in flight finish first.")
      .def("__enter__", [](nb::handle self) { return self; })
      .def("__exit__", [](PySession& s, nb::args) { s.close(); })
      .def_prop_ro("closed", &PySession::closed)
      .def_prop_ro("model", &PySession::model)
      .def_prop_ro("device", &PySession::device)
      .def_prop_ro("input_names", &PySession::input_names)
      .def_prop_ro("output_names", &PySession::output_names)
      .def_prop_ro("inputs", &PySession::inputs,
                   "{name: (dtype, shape)}; None marks a symbolic dimension (any size).");
}

}  // namespace minfer::py
