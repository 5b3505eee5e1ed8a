// A plugin whose entry point is misspelled: the loader must say that it has none.
namespace minfer {
class OpRegistry;
}

extern "C" int minfer_plugin_regster(minfer::OpRegistry*, int) { return 0; }
