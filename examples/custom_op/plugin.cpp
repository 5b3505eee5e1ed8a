// The same op as a plugin: minfer run --plugin libminfer_example_plugin.so MODEL.onnx
#include "minfer/plugin.h"

#include "swish.h"

MINFER_PLUGIN(example::register_swish)
