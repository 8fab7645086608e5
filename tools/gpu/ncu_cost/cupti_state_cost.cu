// What counters cost in-process, with CUPTI's range profiler, against ncu's separate process
// (ncu pays its start, its injection and 0.07-0.12 s a replay pass). This program profiles one kernel (a
// naive transpose, or a streaming add) with the metrics listed on its standard input, one a line,
// replaying the launch itself (user replay, one user range), and prints the passes, the seconds of
// each phase and every metric's value, which ncu's raw page for the same kernel can be set against.
//   cupti_state_cost transpose|vadd [--plain] < metrics.txt   (one metric a line)
// Measured on an H200 (session of 2026-11-26): 25 passes of 21-23 ms each for seven SOL metrics;
// the first metric this API did not know (sm__maximum_warps_per_active_cycle_pct, an ncu-derived
// one) left every later one refused; and a user range spans the launch, so its duration and
// percentages of peak differ from ncu's per-kernel figures (vadd: 92 against 64 us).
// --plain runs the kernel once without CUPTI (the program ncu profiles, for the comparison).
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

__global__ void transpose_naive(const float* in, float* out, int rows, int cols) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x, r = blockIdx.y * blockDim.y + threadIdx.y;
  if (r < rows && c < cols) out[c * rows + r] = in[r * cols + c];
}

__global__ void vadd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

#define CHECK_CUPTI(call)                                                              \
  do {                                                                                 \
    const CUptiResult r_ = (call);                                                     \
    if (r_ != CUPTI_SUCCESS) {                                                         \
      const char* s_ = nullptr;                                                        \
      cuptiGetResultString(r_, &s_);                                                   \
      std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, s_ ? s_ : "?", __LINE__); \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  const std::string kernel = argc > 1 ? argv[1] : "transpose";
  const bool plain = argc > 2 && std::strcmp(argv[2], "--plain") == 0;
  const int rows = 1000, cols = 700, n = 1 << 24;
  const double t_start = now();
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cudaMalloc(&a, sizeof(float) * n);
  cudaMalloc(&b, sizeof(float) * n);
  cudaMalloc(&c, sizeof(float) * n);
  cudaMemset(a, 0, sizeof(float) * n);
  cudaMemset(b, 0, sizeof(float) * n);
  auto launch = [&] {
    if (kernel == "vadd") vadd<<<(n + 255) / 256, 256>>>(a, b, c, n);
    else transpose_naive<<<dim3((cols + 31) / 32, (rows + 7) / 8), dim3(32, 8)>>>(a, c, rows, cols);
  };
  launch();
  cudaDeviceSynchronize();
  const double t_ctx = now();
  std::printf("context, memory and a first launch: %.3f s\n", t_ctx - t_start);
  if (plain) return cudaGetLastError() == cudaSuccess ? 0 : 1;

  std::vector<std::string> names;
  for (std::string line; std::getline(std::cin, line);)
    if (!line.empty() && line[0] != '#') names.push_back(line);
  std::vector<const char*> metrics;
  for (const auto& s : names) metrics.push_back(s.c_str());

  CUcontext ctx = nullptr;
  cuCtxGetCurrent(&ctx);
  CUpti_Profiler_Initialize_Params init{CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  CHECK_CUPTI(cuptiProfilerInitialize(&init));
  CUpti_Device_GetChipName_Params chip{CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = 0;
  CHECK_CUPTI(cuptiDeviceGetChipName(&chip));
  CUpti_Profiler_GetCounterAvailability_Params avail{CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  avail.ctx = ctx;
  CHECK_CUPTI(cuptiProfilerGetCounterAvailability(&avail));
  std::vector<uint8_t> avail_image(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = avail_image.data();
  CHECK_CUPTI(cuptiProfilerGetCounterAvailability(&avail));

  CUpti_Profiler_Host_Initialize_Params host{CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip.pChipName;
  host.pCounterAvailabilityImage = avail_image.data();
  CHECK_CUPTI(cuptiProfilerHostInitialize(&host));
  // Metrics one by one, so that one this chip does not have is named rather than failing the rest.
  std::vector<const char*> kept;
  for (const char* m : metrics) {
    CUpti_Profiler_Host_ConfigAddMetrics_Params add{CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
    add.pHostObject = host.pHostObject;
    add.ppMetricNames = &m;
    add.numMetrics = 1;
    if (cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS) kept.push_back(m);
    else std::printf("not available: %s\n", m);
  }
  CUpti_Profiler_Host_GetConfigImageSize_Params size{CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host.pHostObject;
  CHECK_CUPTI(cuptiProfilerHostGetConfigImageSize(&size));
  std::vector<uint8_t> config(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image{CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host.pHostObject;
  image.configImageSize = config.size();
  image.pConfigImage = config.data();
  CHECK_CUPTI(cuptiProfilerHostGetConfigImage(&image));
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = config.size();
  passes.pConfigImage = config.data();
  CHECK_CUPTI(cuptiProfilerHostGetNumOfPasses(&passes));
  const double t_config = now();
  std::printf("host configuration of %zu metrics: %zu passes, %.3f s\n", kept.size(), passes.numOfPasses, t_config - t_ctx);

  CUpti_RangeProfiler_Enable_Params enable{CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = ctx;
  CHECK_CUPTI(cuptiRangeProfilerEnable(&enable));
  CUpti_RangeProfiler_GetCounterDataSize_Params data_size{CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  data_size.pRangeProfilerObject = enable.pRangeProfilerObject;
  data_size.pMetricNames = kept.data();
  data_size.numMetrics = kept.size();
  data_size.maxNumOfRanges = 1;
  data_size.maxNumRangeTreeNodes = 1;
  CHECK_CUPTI(cuptiRangeProfilerGetCounterDataSize(&data_size));
  std::vector<uint8_t> data(data_size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params data_init{CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  data_init.pRangeProfilerObject = enable.pRangeProfilerObject;
  data_init.counterDataSize = data.size();
  data_init.pCounterData = data.data();
  CHECK_CUPTI(cuptiRangeProfilerCounterDataImageInitialize(&data_init));
  CUpti_RangeProfiler_SetConfig_Params set{CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  set.pRangeProfilerObject = enable.pRangeProfilerObject;
  set.configSize = config.size();
  set.pConfig = config.data();
  set.counterDataImageSize = data.size();
  set.pCounterDataImage = data.data();
  set.range = CUPTI_UserRange;
  set.replayMode = CUPTI_UserReplay;
  set.maxRangesPerPass = 1;
  set.numNestingLevels = 1;
  set.minNestingLevel = 1;
  set.passIndex = 0;
  set.targetNestingLevel = 1;
  CHECK_CUPTI(cuptiRangeProfilerSetConfig(&set));
  const double t_enable = now();

  int submitted = 0;
  for (bool all = false; !all; ++submitted) {
    CUpti_RangeProfiler_Start_Params start{CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
    start.pRangeProfilerObject = enable.pRangeProfilerObject;
    CHECK_CUPTI(cuptiRangeProfilerStart(&start));
    CUpti_RangeProfiler_PushRange_Params push{CUpti_RangeProfiler_PushRange_Params_STRUCT_SIZE};
    push.pRangeProfilerObject = enable.pRangeProfilerObject;
    push.pRangeName = "call";
    CHECK_CUPTI(cuptiRangeProfilerPushRange(&push));
    launch();
    CUpti_RangeProfiler_PopRange_Params pop{CUpti_RangeProfiler_PopRange_Params_STRUCT_SIZE};
    pop.pRangeProfilerObject = enable.pRangeProfilerObject;
    CHECK_CUPTI(cuptiRangeProfilerPopRange(&pop));
    CUpti_RangeProfiler_Stop_Params stop{CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
    stop.pRangeProfilerObject = enable.pRangeProfilerObject;
    CHECK_CUPTI(cuptiRangeProfilerStop(&stop));
    all = stop.isAllPassSubmitted != 0;
    if (submitted > 1000) { std::puts("more than 1000 passes: giving up"); return 1; }
  }
  CUpti_RangeProfiler_DecodeData_Params decode{CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = enable.pRangeProfilerObject;
  CHECK_CUPTI(cuptiRangeProfilerDecodeData(&decode));
  const double t_passes = now();
  std::printf("replay: %d launches, %.3f s (%.2f ms a pass); enable and set-up %.3f s\n", submitted, t_passes - t_enable,
              1e3 * (t_passes - t_enable) / submitted, t_enable - t_config);

  std::vector<double> values(kept.size());
  CUpti_Profiler_Host_EvaluateToGpuValues_Params eval{CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
  eval.pHostObject = host.pHostObject;
  eval.pCounterDataImage = data.data();
  eval.counterDataImageSize = data.size();
  eval.rangeIndex = 0;
  eval.ppMetricNames = kept.data();
  eval.numMetrics = kept.size();
  eval.pMetricValues = values.data();
  CHECK_CUPTI(cuptiProfilerHostEvaluateToGpuValues(&eval));
  const double t_eval = now();
  std::printf("evaluation: %.3f s; total in-process profile %.3f s\n", t_eval - t_passes, t_eval - t_ctx);
  for (std::size_t i = 0; i < kept.size(); ++i) std::printf("  %-72s %.6g\n", kept[i], values[i]);
  CUpti_RangeProfiler_Disable_Params disable{CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
  disable.pRangeProfilerObject = enable.pRangeProfilerObject;
  cuptiRangeProfilerDisable(&disable);
  CUpti_Profiler_Host_Deinitialize_Params host_end{CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  host_end.pHostObject = host.pHostObject;
  cuptiProfilerHostDeinitialize(&host_end);
  return 0;
}
