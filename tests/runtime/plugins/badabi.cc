// A plugin built for another plugin ABI version (999), as MINFER_PLUGIN would define its entry
// point under headers of that version: it refuses to register with this minfer.
namespace minfer {
class OpRegistry;
}

extern "C" int minfer_plugin_register(minfer::OpRegistry*, int abi_version) {
  constexpr int kBuiltFor = 999;
  return abi_version == kBuiltFor ? 0 : kBuiltFor;
}
