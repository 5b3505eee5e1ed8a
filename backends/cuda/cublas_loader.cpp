// cuBLAS and cuBLASLt, opened on first use. Linked normally, the two libraries cost every
// process that loads minfer about 215 MB of resident memory at start-up (the dynamic linker
// relocates their data), even one that never touches a GPU. Instead, minfer defines the few
// cuBLAS functions it calls as forwarders that dlopen the library the first time one is
// called: a CPU-only run never maps it, and a CUDA run pays for it once.
//
// Each forwarder has the header's exact signature, so the calling code is plain cuBLAS. When
// the library cannot be opened they return CUBLAS_STATUS_NOT_INITIALIZED, and the status
// strings say why (the dlopen error), which MINFER_CUBLAS_CHECK puts in its Error(Device).
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <mutex>
#include <string>

namespace {

#define MINFER_STR2(x) #x
#define MINFER_STR(x) MINFER_STR2(x)

struct Library {
  explicit Library(const char* name) : soname(name) {}
  const char* soname;  // the major version minfer was built against
  void* handle = nullptr;
  std::string error;
  std::once_flag once;
};

Library g_cublas("libcublas.so." MINFER_STR(CUBLAS_VER_MAJOR));
Library g_cublaslt("libcublasLt.so." MINFER_STR(CUBLAS_VER_MAJOR));

// The folder of the CUDA runtime minfer is linked to: the toolkit's libraries sit beside it
// when the loader's search path does not know them.
std::string cudart_folder() {
  Dl_info info{};
  if (!dladdr(reinterpret_cast<void*>(&cudaGetDeviceCount), &info) || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash + 1);
}

void* open_library(Library& lib) {
  std::call_once(lib.once, [&] {
    lib.handle = dlopen(lib.soname, RTLD_NOW | RTLD_LOCAL);
    if (!lib.handle) {
      const char* first = dlerror();
      lib.error = first ? first : lib.soname;
      const std::string folder = cudart_folder();
      if (!folder.empty()) lib.handle = dlopen((folder + lib.soname).c_str(), RTLD_NOW | RTLD_LOCAL);
    }
  });
  return lib.handle;
}

template <typename F>
F symbol(Library& lib, const char* name) {
  void* handle = open_library(lib);
  return handle ? reinterpret_cast<F>(dlsym(handle, name)) : nullptr;
}

std::string g_unavailable;  // the status text while a library cannot be opened

const char* unavailable(Library& lib) {
  static std::once_flag once;
  std::call_once(once, [&] {
    g_unavailable = "cuBLAS could not be loaded (" + lib.error + ")";
  });
  return g_unavailable.c_str();
}

}  // namespace

#define MINFER_CUBLAS_FORWARD(LIB, NAME, PARAMS, ARGS)                \
  extern "C" cublasStatus_t CUBLASWINAPI NAME PARAMS {                \
    static const auto fn = symbol<decltype(&NAME)>(LIB, #NAME);       \
    return fn ? fn ARGS : CUBLAS_STATUS_NOT_INITIALIZED;              \
  }

extern "C" const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  static const auto fn = symbol<decltype(&cublasGetStatusName)>(g_cublas, "cublasGetStatusName");
  return fn ? fn(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

extern "C" const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  static const auto fn =
      symbol<decltype(&cublasGetStatusString)>(g_cublas, "cublasGetStatusString");
  return fn ? fn(status) : unavailable(g_cublas);
}

MINFER_CUBLAS_FORWARD(g_cublas, cublasCreate_v2, (cublasHandle_t * handle), (handle))
MINFER_CUBLAS_FORWARD(g_cublas, cublasDestroy_v2, (cublasHandle_t handle), (handle))
MINFER_CUBLAS_FORWARD(g_cublas, cublasSetStream_v2, (cublasHandle_t handle, cudaStream_t stream),
                      (handle, stream))
MINFER_CUBLAS_FORWARD(g_cublas, cublasSetWorkspace_v2,
                      (cublasHandle_t handle, void* workspace, size_t bytes),
                      (handle, workspace, bytes))
MINFER_CUBLAS_FORWARD(g_cublas, cublasSgemm_v2,
                      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                       int m, int n, int k, const float* alpha, const float* A, int lda,
                       const float* B, int ldb, const float* beta, float* C, int ldc),
                      (handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc))
MINFER_CUBLAS_FORWARD(g_cublas, cublasSgemmStridedBatched,
                      (cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                       int m, int n, int k, const float* alpha, const float* A, int lda,
                       long long int strideA, const float* B, int ldb, long long int strideB,
                       const float* beta, float* C, int ldc, long long int strideC,
                       int batchCount),
                      (handle, transa, transb, m, n, k, alpha, A, lda, strideA, B, ldb, strideB,
                       beta, C, ldc, strideC, batchCount))

MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtCreate, (cublasLtHandle_t * handle), (handle))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtDestroy, (cublasLtHandle_t handle), (handle))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmul,
                      (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha,
                       const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                       cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                       cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                       const cublasLtMatmulAlgo_t* algo, void* workspace, size_t workspaceBytes,
                       cudaStream_t stream),
                      (handle, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                       workspace, workspaceBytes, stream))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulAlgoGetHeuristic,
                      (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                       cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                       cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                       int* returnAlgoCount),
                      (handle, desc, Adesc, Bdesc, Cdesc, Ddesc, preference, requestedAlgoCount,
                       heuristicResultsArray, returnAlgoCount))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulDescCreate,
                      (cublasLtMatmulDesc_t * desc, cublasComputeType_t computeType,
                       cudaDataType_t scaleType),
                      (desc, computeType, scaleType))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulDescSetAttribute,
                      (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                       const void* buf, size_t sizeInBytes),
                      (desc, attr, buf, sizeInBytes))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulPreferenceCreate,
                      (cublasLtMatmulPreference_t * pref), (pref))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulPreferenceDestroy,
                      (cublasLtMatmulPreference_t pref), (pref))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatmulPreferenceSetAttribute,
                      (cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr,
                       const void* buf, size_t sizeInBytes),
                      (pref, attr, buf, sizeInBytes))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatrixLayoutCreate,
                      (cublasLtMatrixLayout_t * layout, cudaDataType type, uint64_t rows,
                       uint64_t cols, int64_t ld),
                      (layout, type, rows, cols, ld))
MINFER_CUBLAS_FORWARD(g_cublaslt, cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout),
                      (layout))
