// The registry of device backends (runtime/device_backend.h): a third backend plugs in by
// registering itself, and asking for one that is not there is a clear error.
#include "runtime/device_backend.h"
#include "test_util.h"

namespace minfer::test {
namespace {

// A backend with one device and no memory of its own: enough to be found and asked.
class FakeBackend final : public DeviceBackend {
 public:
  int device_count() override { return 1; }
  MachinePeak measure_peak(int device) override {
    return {1.0, 2.0, "fake:" + std::to_string(device)};
  }

  [[noreturn]] static void no_context() {
    throw Error(ErrorCode::Unsupported, "the fake backend makes no contexts");
  }
  std::shared_ptr<DeviceContext> create_context(int) override { no_context(); }
  void* device_alloc(DeviceContext&, size_t) override { no_context(); }
  void device_free(DeviceContext&, void*) override {}
  void copy_to_device(DeviceContext&, void*, const void*, size_t) override { no_context(); }
  void copy_to_host(DeviceContext&, void*, const void*, size_t) override { no_context(); }
  void copy_on_device(DeviceContext&, void*, const void*, size_t) override { no_context(); }
  void copy_any(DeviceContext&, void*, const void*, size_t) override { no_context(); }
  void synchronize(DeviceContext&) override { no_context(); }
  size_t device_free_memory(DeviceContext&) override { no_context(); }
  void* stream_of(DeviceContext&) override { no_context(); }
  void wait_for_stream(DeviceContext&, void*) override { no_context(); }
  void signal_stream(DeviceContext&, void*) override { no_context(); }
  std::unique_lock<std::mutex> lock_stream(DeviceContext&) override { no_context(); }
  void* pinned_alloc(DeviceContext&, size_t) override { no_context(); }
  void pinned_free(DeviceContext&, void*) override {}
  void begin_capture(DeviceContext&) override { no_context(); }
  void* end_capture(DeviceContext&) override { no_context(); }
  void abort_capture(DeviceContext&) noexcept override {}
  void launch_graph(DeviceContext&, void*) override { no_context(); }
  void destroy_graph(void*) noexcept override {}
  void* event_create() override { no_context(); }
  void event_destroy(void*) noexcept override {}
  void event_record(void*, DeviceContext&) override { no_context(); }
  float event_elapsed_ms(void*, void*) override { no_context(); }
};

TEST_CASE("device backends: a registered backend is found by name", "[runtime][device]") {
  const std::string name = "test-fake-npu";
  if (!find_device_backend(name)) register_device_backend(name, std::make_unique<FakeBackend>());
  DeviceBackend* found = find_device_backend(name);
  REQUIRE(found != nullptr);
  CHECK(&device_backend(name) == found);
  CHECK(device_available(name));
  CHECK(found->measure_peak(3).method == "fake:3");
  CHECK_THROWS_MATCHES(found->create_context(0), Error,
                       Catch::Matchers::Predicate<Error>(
                           [](const Error& e) { return e.code() == ErrorCode::Unsupported; }));
  // One backend per name: a second registration is refused, and the first one stays.
  try {
    register_device_backend(name, std::make_unique<FakeBackend>());
    FAIL("a second backend was registered under the same name");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::InvalidArgument);
    CHECK_THAT(e.what(), Catch::Contains("already registered") && Catch::Contains(name));
  }
  CHECK(find_device_backend(name) == found);
  CHECK_THROWS_AS(register_device_backend("", std::make_unique<FakeBackend>()), Error);
  CHECK_THROWS_AS(register_device_backend("test-null", nullptr), Error);
}

TEST_CASE("device backends: asking for one that is not registered says so", "[runtime][device]") {
  CHECK(find_device_backend("no-such-device") == nullptr);
  CHECK_FALSE(device_available("no-such-device"));
  try {
    device_backend("no-such-device");
    FAIL("an unregistered backend was found");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Device);
    CHECK_THAT(e.what(), Catch::Contains("no device backend named 'no-such-device'") &&
                             Catch::Contains("registered:"));
  }
  // The CPU is the host: it has no device backend.
  CHECK_THROWS_AS(device_backend(Device::cpu()), Error);
}

TEST_CASE("device backends: the CUDA backend is registered exactly in CUDA builds",
          "[runtime][device][cuda]") {
#ifdef MINFER_WITH_CUDA
  REQUIRE(find_device_backend("cuda") != nullptr);
  CHECK(&device_backend(Device::cuda()) == find_device_backend("cuda"));
#else
  CHECK(find_device_backend("cuda") == nullptr);
  CHECK_FALSE(device_available("cuda"));
  try {
    device_backend(Device::cuda());
    FAIL("a CUDA backend was found in a build without CUDA");
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::Device);
    CHECK_THAT(e.what(),
               Catch::Contains("no CUDA backend") && Catch::Contains("-DMINFER_WITH_CUDA=ON"));
  }
#endif
}

}  // namespace
}  // namespace minfer::test
