#!/bin/sh
# The objects compiled per ISA level (backends/cpu/isa/, cmake/MinferIsa.cmake) must define no
# weak or global code: the linker keeps one copy of a weak (inline or template) function for
# the whole library, and an AVX-512 copy of it could then run on the AVX2 path of a CPU
# without AVX-512. Each object may export only its data tables. Arguments: nm, then the
# objects of minfer_objects (those not under isa/ are skipped).
nm_tool="$1"
shift
checked=0
status=0
for obj in "$@"; do
  case "$obj" in
    */isa/*) ;;
    *) continue ;;
  esac
  checked=$((checked + 1))
  # Defined symbols of kinds W/V (weak), u (unique global), T (global code), i (ifunc).
  # (typeinfo objects are data, the same at every level: UBSan's function-type checks emit
  # them for the kernels' pointer types.)
  bad=$("$nm_tool" -C --defined-only "$obj" | grep -E ' [WVuTi] ' | grep -v ' V typeinfo ')
  if [ -n "$bad" ]; then
    echo "$obj defines code other levels could share:"
    echo "$bad"
    status=1
  fi
done
if [ "$checked" -eq 0 ]; then
  echo "no per-ISA objects found"
  exit 1
fi
[ "$status" -eq 0 ] && echo "$checked per-ISA objects export only data tables"
exit $status
