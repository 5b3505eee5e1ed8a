// Runs a test body once per ISA level this CPU supports, with the CPU kernels capped there
// (backends/cpu/isa.h), so that every compiled path the machine can run is checked; the cap
// is lifted afterwards, also when the body throws.
#pragma once

#include <catch2/catch.hpp>

#include "backends/cpu/isa.h"

namespace minfer::test {

template <typename Body>
void for_each_isa(Body&& body) {
  struct Uncap {
    ~Uncap() { cpu::reset_isa_cap(); }
  } uncap;
  for (cpu::Isa isa : cpu::supported_isas()) {
    cpu::set_isa_cap(isa);
    INFO("ISA level " << cpu::isa_name(isa));
    body(isa);
  }
}

}  // namespace minfer::test
