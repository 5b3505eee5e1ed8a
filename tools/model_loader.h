// What several commands share: the MODEL argument (built-in name or .onnx file), weights,
// image preprocessing, session options, class names and input tensors.
#pragma once

#include <string>
#include <vector>

#include "minfer/graph.h"
#include "minfer/models.h"
#include "minfer/session.h"
#include "tools/args.h"

namespace minfer::cli {

struct LoadedModel {
  std::string spec;  // what the user typed
  bool builtin = false;
  ModelInfo info;       // ONNX models: name = file stem, preprocess from the flags
  std::string weights;  // built-in models: the safetensors file, "" = seeded
  Graph graph;
  std::vector<std::string> class_names;  // may be empty (then "class 17")
  double load_ms = 0;

  std::string weights_description() const;  // "seeded", "resnet20.safetensors", "onnx"
  std::string title() const;                // "cifar-resnet20 (seeded weights)", "model.onnx"
  std::string class_name(int64_t index) const;
};

// MODEL positional plus --weights --seed --labels --mean --std --size.
void add_model_options(ArgParser& p);
// --device --precision --threads --opt-level --plugin.
void add_session_options(ArgParser& p);
void add_plugin_option(ArgParser& p);

// Loads positional 0. Plugins named by --plugin are loaded first.
LoadedModel load_model(const Args& args);
SessionOptions session_options(const Args& args);
std::string describe_options(const SessionOptions& o);  // "cpu · fp32 · 2 threads"
int effective_threads(const SessionOptions& o);         // 0 ("all") resolved
const char* precision_name(Precision p);                // "fp32", "int8"
// Loads every --plugin library into the global op registry.
void load_plugins(const Args& args);

// One class name per line; "n01440764 tench, Tinca tinca" (synset_words.txt) keeps the text
// after the WordNet id.
std::vector<std::string> load_labels(const std::string& path);

// A graph input's shape with its symbolic dims: dim 0 -> `batch`; any other symbolic dim is
// an error naming the input.
Shape concrete_shape(const Value& input, int64_t batch);

// The batch size to run: --batch (default `def`) for a symbolic batch dim, else the model's
// fixed batch (a different --batch is a UsageError). Reads the first non-constant input.
int64_t choose_batch(const Graph& g, const Args& args, int64_t def);
// True when the first input's batch dimension is a fixed number.
bool has_fixed_batch(const Graph& g);

// Loads --image files (preprocessed as the model wants) into one [N,3,H,W] batch.
Tensor load_images(const std::vector<std::string>& paths, const LoadedModel& model);

// "N" for symbolic dims: "[N,3,224,224]".
std::string shape_string(const Shape& s);

}  // namespace minfer::cli
