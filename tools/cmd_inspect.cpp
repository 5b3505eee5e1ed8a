// `minfer inspect`: what a model is made of, after the optimization passes it would run with.
#include <cstdio>
#include <fstream>
#include <optional>

#include "graph/pass.h"
#include "tools/commands.h"
#include "tools/format.h"
#include "tools/graph_stats.h"
#include "tools/json.h"
#include "tools/kernel_report.h"
#include "tools/model_loader.h"

namespace minfer::cli {

namespace {

ArgParser make_parser() {
  ArgParser p("inspect", "MODEL [--dot F] [--json] [options]",
              "Shows a model's nodes (name, op, output shape, parameters, MACs), its op\n"
              "histogram, parameter and MAC totals, and the memory plan, at the model's batch\n"
              "(1 where it is symbolic; --shape pins it). The graph is shown after the passes\n"
              "of --opt-level (0 = as loaded).");
  add_model_options(p);
  add_session_options(p);
  p.option("--dot", "F", "write the graph as loaded as graphviz DOT to F (dot -Tsvg F -o g.svg)");
  p.option("--dot-optimized", "F", "write the graph after the passes as graphviz DOT to F");
  p.flag("--passes", "show what each optimization pass changed");
  p.flag("--summary", "leave out the per-node table");
  p.flag("--json", "print one JSON object on stdout instead of text");
  return p;
}

Json shape_json(const Value* v) {
  return v->shape_known ? Json::array_of(v->shape.dims()) : Json();
}

void write_dot(const Graph& g, const std::string& path, const char* option) {
  std::ofstream f(path);
  check(bool(f), ErrorCode::InvalidArgument, std::string(option) + ": cannot write '" + path + "'");
  f << to_dot(g);
  check(bool(f), ErrorCode::InvalidArgument, std::string(option) + ": error writing '" + path + "'");
}

// A model with ops minfer does not have cannot be optimized or planned: show what it is made
// of and every unsupported op with the nodes that use it, instead of stopping at the first.
int report_unsupported(const LoadedModel& model, const std::vector<const Node*>& bad,
                       bool json) {
  std::map<std::string, std::vector<std::string>> nodes_of;  // "domain:op" -> node names
  for (const Node* n : bad)
    nodes_of[(n->domain.empty() ? "" : n->domain + ":") + n->op_type].push_back(n->name);
  std::map<std::string, int> histogram;
  for (const Node* n : model.graph.nodes())
    ++histogram[(n->domain.empty() ? "" : n->domain + ":") + n->op_type];
  if (json) {
    Json j = Json::object();
    j.set("model", model.spec);
    j.set("node_count", model.graph.node_count());
    j.set("runnable", false);
    Json ops = Json::array();
    for (const auto& [op, names] : nodes_of) {
      Json list = Json::array();
      for (const auto& name : names) list.push(name);
      ops.push(Json::object().set("op", op).set("nodes", list));
    }
    j.set("unsupported_ops", ops);
    Json hist = Json::object();
    for (const auto& [op, count] : histogram) hist.set(op, count);
    j.set("op_histogram", hist);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("%s: %s\n", model.spec.c_str(), model.info.description.c_str());
  std::printf("%zu nodes; the model cannot run: %zu of them use %zu ops minfer does not support\n",
              model.graph.node_count(), bad.size(), nodes_of.size());
  std::printf("\nunsupported ops\n");
  Table t({"op", "nodes", "node names"}, "lrl");
  for (const auto& [op, names] : nodes_of) {
    std::string list;
    for (const auto& name : names) list += (list.empty() ? "" : ", ") + name;
    t.add({op, std::to_string(names.size()), list});
  }
  std::fputs(t.str("  ").c_str(), stdout);
  std::printf("\nop histogram (as loaded)\n");
  Table h({"op", "count"}, "lr");
  for (const auto& [op, count] : histogram) h.add({op, std::to_string(count)});
  std::fputs(h.str("  ").c_str(), stdout);
  return 0;
}

}  // namespace

int cmd_inspect(const Argv& argv) {
  const ArgParser parser = make_parser();
  const Args args = parser.parse(argv);
  if (args.help_requested()) {
    std::fputs(parser.help().c_str(), stdout);
    return 0;
  }
  const SessionOptions options = session_options(args);
  LoadedModel model = load_model(args);
  if (const auto bad = unsupported_nodes(model.graph); !bad.empty())
    return report_unsupported(model, bad, args.has("--json"));
  // Optimize here (the session's own run of the pipeline then changes nothing) to keep each
  // pass's report and the graph as loaded.
  model.graph.infer_shapes();
  if (args.has("--dot")) write_dot(model.graph, args.get("--dot"), "--dot");
  const std::vector<PassReport> reports = optimize(model.graph, options);
  Session session(std::move(model.graph), options);
  const Graph& g = session.graph();
  if (args.has("--dot-optimized"))
    write_dot(g, args.get("--dot-optimized"), "--dot-optimized");

  // Planned at the inputs' shapes, a symbolic batch taken as 1 (as graph_stats counts MACs).
  std::map<std::string, Shape> shapes;
  for (const Value* v : g.inputs())
    if (!v->is_constant()) shapes[v->name] = concrete_shape(*v, 1);
  // A model whose shapes depend on input values (a Reshape target given as an input) is
  // planned when it runs; its arena size is then unknown here.
  std::optional<PlanStats> plan;
  try {
    plan = session.plan_stats(shapes);
  } catch (const Error& e) {
    if (e.code() != ErrorCode::Unsupported ||
        std::string(e.what()).find("values of its integer inputs") == std::string::npos)
      throw;
  }
  const GraphStats st = graph_stats(g);
  const std::string at = batch_label(st.batch);  // "at batch 4"

  if (args.has("--json")) {
    Json j = Json::object();
    j.set("model", model.spec);
    j.set("description", model.info.description);
    j.set("opt_level", options.optimization_level);
    Json ins = Json::array(), outs = Json::array();
    for (const Value* v : g.inputs())
      if (!v->is_constant())
        ins.push(Json::object()
                     .set("name", v->name)
                     .set("dtype", dtype_name(v->dtype))
                     .set("shape", shape_json(v)));
    for (const Value* v : g.outputs())
      outs.push(Json::object()
                    .set("name", v->name)
                    .set("dtype", dtype_name(v->dtype))
                    .set("shape", shape_json(v)));
    j.set("inputs", ins);
    j.set("outputs", outs);
    j.set("node_count", st.nodes.size());
    Json nodes = Json::array();
    for (const NodeStats& ns : st.nodes) {
      const Node* n = ns.node;
      Json o = Json::object().set("name", n->name).set("op", n->op_type);
      if (!n->domain.empty()) o.set("domain", n->domain);
      o.set("output_shape", n->outputs.empty() ? Json() : shape_json(n->outputs[0]));
      o.set("params", ns.params).set("macs", ns.macs);
      nodes.push(o);
    }
    j.set("nodes", nodes);
    Json hist = Json::object();
    for (const auto& [op, count] : st.op_histogram) hist.set(op, count);
    j.set("op_histogram", hist);
    j.set("parameters", st.params);
    j.set("parameter_bytes", st.param_bytes);
    j.set("batch", st.batch > 0 ? Json(st.batch) : Json());  // what macs and arena are for
    j.set("macs", st.macs);
    j.set("arena_bytes", plan ? Json(plan->arena_bytes) : Json());
    j.set("naive_bytes", plan ? Json(plan->naive_bytes) : Json());
    j.set("kernels", plan ? kernels_json(*plan) : Json());
    if (!options.device.is_cpu())  // GPU memory: weights as packed + one run's device arena
      j.set("device_bytes", plan ? Json(plan->device_bytes) : Json());
    if (args.has("--passes")) {
      Json passes = Json::array();
      for (const PassReport& r : reports) {
        Json changes = Json::array();
        for (const auto& c : r.changes) changes.push(c);
        passes.push(Json::object()
                        .set("name", r.name)
                        .set("changed", r.changed)
                        .set("nodes_before", r.nodes_before)
                        .set("nodes_after", r.nodes_after)
                        .set("milliseconds", r.milliseconds)
                        .set("changes", changes));
      }
      j.set("passes", passes);
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }

  std::printf("%s: %s\n", model.spec.c_str(), model.info.description.c_str());
  std::printf("weights  %s\n", model.weights_description().c_str());
  for (const Value* v : g.inputs())
    if (!v->is_constant())
      std::printf("input    %s %s %s\n", v->name.c_str(), dtype_name(v->dtype),
                  shape_string(v->shape).c_str());
  for (const Value* v : g.outputs())
    std::printf("output   %s %s %s\n", v->name.c_str(), dtype_name(v->dtype),
                shape_string(v->shape).c_str());

  if (args.has("--passes")) {
    std::printf("\npasses (opt-level %d)\n", options.optimization_level);
    Table t({"pass", "nodes", "ms", "changes"}, "lrrl");
    for (const PassReport& r : reports)
      t.add({r.name, std::to_string(r.nodes_before) + " -> " + std::to_string(r.nodes_after),
             fixed(r.milliseconds, 2), std::to_string(r.changes.size())});
    std::fputs(t.str("  ").c_str(), stdout);
    for (const PassReport& r : reports)
      for (const auto& c : r.changes) std::printf("  %-28s %s\n", r.name.c_str(), c.c_str());
  }

  if (!args.has("--summary")) {
    std::printf("\nnodes (opt-level %d; MACs %s)\n", options.optimization_level, at.c_str());
    Table t({"#", "node", "op", "output", "params", "MACs"}, "rlllrr");
    int i = 0;
    for (const NodeStats& ns : st.nodes) {
      const Node* n = ns.node;
      std::string out = n->outputs.empty() || !n->outputs[0]->shape_known
                            ? "?"
                            : shape_string(n->outputs[0]->shape);
      t.add({std::to_string(i++), n->name,
             n->domain.empty() ? n->op_type : n->domain + ":" + n->op_type, out,
             ns.params ? format_count(double(ns.params)) : "",
             ns.macs ? format_count(double(ns.macs)) : ""});
    }
    std::fputs(t.str("  ").c_str(), stdout);
  }

  std::printf("\nop histogram\n");
  Table h({"op", "count"}, "lr");
  for (const auto& [op, count] : st.op_histogram) h.add({op, std::to_string(count)});
  std::fputs(h.str("  ").c_str(), stdout);

  std::printf("\ntotals\n");
  Table tot({"", ""}, "ll");
  tot.add({"nodes", std::to_string(st.nodes.size())});
  tot.add({"parameters",
           format_count(double(st.params)) + " (" + format_bytes(double(st.param_bytes)) + ")"});
  std::string macs = format_count(double(st.macs)) + " " + at;
  if (st.batch > 1) macs += " (" + format_count(double(st.macs / st.batch)) + " per image)";
  tot.add({"MACs", macs});
  if (!plan) {
    tot.add({"arena", "planned at run time (shapes depend on the values of integer inputs)"});
  } else {
    std::string saving;
    if (plan->arena_bytes > 0)
      saving = ", " + fixed(double(plan->naive_bytes) / double(plan->arena_bytes), 1) + "x less";
    tot.add({"arena", format_bytes(double(plan->arena_bytes)) + " " + at + " (naive " +
                          format_bytes(double(plan->naive_bytes)) + saving + ")"});
    tot.add({"kernels", kernels_text(*plan)});
    if (!options.device.is_cpu())
      tot.add({"GPU memory", format_bytes(double(plan->device_bytes)) + " " + at +
                                 " (weights as packed + one run's arena)"});
  }
  std::fputs(tot.str("  ", /*header=*/false).c_str(), stdout);
  for (const char* opt : {"--dot", "--dot-optimized"})
    if (args.has(opt)) std::printf("\nDOT graph written to %s\n", args.get(opt).c_str());
  return 0;
}

}  // namespace minfer::cli
