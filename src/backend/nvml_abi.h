/* SPDX-License-Identifier: Apache-2.0 */
/* nvml_abi.h: the subset of NVML's C ABI that gpuslice uses (backend/nvml.c,
 * through dlopen) and provides (nvml-emu, as libnvidia-ml.so.1), declared in
 * our own words from the facts in shared/reference/mig-facts.md §2, §5, §6 and
 * NVML's public header (NVML_API_VERSION 13). No NVIDIA header is needed to
 * build; tests/nvml-emu/test-nvml-abi.c pins every size, offset and value below. */
#ifndef GS_NVML_ABI_H
#define GS_NVML_ABI_H

/* ---- return codes (reference §6.3) ---- */
typedef enum nvmlReturn_enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_UNINITIALIZED = 1,
  NVML_ERROR_INVALID_ARGUMENT = 2,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_ALREADY_INITIALIZED = 5,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_INSUFFICIENT_SIZE = 7,
  NVML_ERROR_INSUFFICIENT_POWER = 8,
  NVML_ERROR_DRIVER_NOT_LOADED = 9,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_IRQ_ISSUE = 11,
  NVML_ERROR_LIBRARY_NOT_FOUND = 12,
  NVML_ERROR_FUNCTION_NOT_FOUND = 13,
  NVML_ERROR_CORRUPTED_INFOROM = 14,
  NVML_ERROR_GPU_IS_LOST = 15,
  NVML_ERROR_RESET_REQUIRED = 16,
  NVML_ERROR_OPERATING_SYSTEM = 17,
  NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18,
  NVML_ERROR_IN_USE = 19,
  NVML_ERROR_MEMORY = 20,
  NVML_ERROR_NO_DATA = 21,
  NVML_ERROR_VGPU_ECC_NOT_SUPPORTED = 22,
  NVML_ERROR_INSUFFICIENT_RESOURCES = 23,
  NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
  NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25,
  NVML_ERROR_DEPRECATED = 26,
  NVML_ERROR_NOT_READY = 27,
  NVML_ERROR_GPU_NOT_FOUND = 28,
  NVML_ERROR_INVALID_STATE = 29,
  NVML_ERROR_RESET_TYPE_NOT_SUPPORTED = 30,
  NVML_ERROR_UNKNOWN = 999,
} nvmlReturn_t;

/* ---- handles: opaque pointers ---- */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

/* ---- buffer sizes ---- */
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE 32
#define NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE 16
#define NVML_DEVICE_UUID_BUFFER_SIZE 80
#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_BUFFER_SIZE 64
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_DEVICE_SERIAL_BUFFER_SIZE 30
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
#define NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE 80

/* ---- init flags, MIG mode ---- */
#define NVML_INIT_FLAG_NO_GPUS 1
#define NVML_INIT_FLAG_NO_ATTACH 2
#define NVML_DEVICE_MIG_DISABLE 0x0
#define NVML_DEVICE_MIG_ENABLE 0x1

/* ---- struct versions: sizeof | version << 24 (reference §6.2) ---- */
#define NVML_STRUCT_VERSION(type, ver) (unsigned int)(sizeof(nvml##type##_v##ver##_t) | ((ver) << 24U))

/* ---- device information ---- */
typedef struct nvmlPciInfo_st {
  char busIdLegacy[NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE]; /* "0000:07:00.0" */
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;    /* device id << 16 | vendor id */
  unsigned int pciSubSystemId;
  char busId[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE]; /* "00000000:07:00.0" */
} nvmlPciInfo_t;

typedef struct nvmlMemory_st {
  unsigned long long total, free, used; /* bytes */
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
  unsigned int version;
  unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 NVML_STRUCT_VERSION(Memory, 2)

typedef struct nvmlUtilization_st {
  unsigned int gpu, memory; /* percent */
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_v1_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* The v2 layout, also what _v3 of the process queries fills. */
typedef struct nvmlProcessInfo_v2_st {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;     /* 0xFFFFFFFF outside MIG */
  unsigned int computeInstanceId; /* 0xFFFFFFFF outside MIG */
} nvmlProcessInfo_v2_t, nvmlProcessInfo_t;

typedef struct nvmlDeviceAttributes_st {
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  unsigned int gpuInstanceSliceCount;
  unsigned int computeInstanceSliceCount;
  unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/* ---- GPU instances (reference §2.1, §6.2) ---- */
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_GPU_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_GPU_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_GPU_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1 0x8
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2 0x9
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX 0xA
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX 0xB
#define NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX 0xC
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME 0xD
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME 0xE
#define NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME 0xF
#define NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME 0x10
#define NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX 0x11
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12
#define NVML_GPU_INSTANCE_PROFILE_CAPS_P2P 0x1
#define NVML_GPU_INSTANCE_PROFILE_CAPS_GFX 0x2

typedef struct nvmlGpuInstancePlacement_st {
  unsigned int start; /* first memory slice */
  unsigned int size;  /* memory slices */
} nvmlGpuInstancePlacement_t;

typedef struct nvmlGpuInstanceProfileInfo_st {
  unsigned int id; /* the per-device profile ID, not the enum */
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB; /* MiB despite the name */
} nvmlGpuInstanceProfileInfo_t;

typedef struct nvmlGpuInstanceProfileInfo_v2_st {
  unsigned int version;
  unsigned int id;
  unsigned int isP2pSupported;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE]; /* "MIG 1g.5gb" */
} nvmlGpuInstanceProfileInfo_v2_t;
#define nvmlGpuInstanceProfileInfo_v2 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 2)

/* v3 drops isP2pSupported and adds capabilities; passed through the v2 pointer type. */
typedef struct nvmlGpuInstanceProfileInfo_v3_st {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int copyEngineCount;
  unsigned int decoderCount;
  unsigned int encoderCount;
  unsigned int jpegCount;
  unsigned int ofaCount;
  unsigned long long memorySizeMB;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned int capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;
#define nvmlGpuInstanceProfileInfo_v3 NVML_STRUCT_VERSION(GpuInstanceProfileInfo, 3)

typedef struct nvmlGpuInstanceInfo_st {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;

/* ---- compute instances (reference §5.1, §6.2) ---- */
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE 0x0
#define NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE 0x2
#define NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE 0x3
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE 0x4
#define NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE 0x5
#define NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE 0x6
#define NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 0x7
#define NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL 0x8
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED 0x0
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1
#define NVML_COMPUTE_INSTANCE_PROFILE_CAPS_GFX 0x1

typedef struct nvmlComputeInstancePlacement_st {
  unsigned int start; /* first compute slice within the GI */
  unsigned int size;
} nvmlComputeInstancePlacement_t;

typedef struct nvmlComputeInstanceProfileInfo_st {
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct nvmlComputeInstanceProfileInfo_v2_st {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlComputeInstanceProfileInfo_v2_t;
#define nvmlComputeInstanceProfileInfo_v2 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 2)

typedef struct nvmlComputeInstanceProfileInfo_v3_st {
  unsigned int version;
  unsigned int id;
  unsigned int sliceCount;
  unsigned int instanceCount;
  unsigned int multiprocessorCount;
  unsigned int sharedCopyEngineCount;
  unsigned int sharedDecoderCount;
  unsigned int sharedEncoderCount;
  unsigned int sharedJpegCount;
  unsigned int sharedOfaCount;
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
  unsigned int capabilities;
} nvmlComputeInstanceProfileInfo_v3_t;
#define nvmlComputeInstanceProfileInfo_v3 NVML_STRUCT_VERSION(ComputeInstanceProfileInfo, 3)

typedef struct nvmlComputeInstanceInfo_st {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
  nvmlComputeInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

/* ---- device facts nvml-emu emulates (brand, architecture, temperature) ---- */
typedef enum nvmlBrandType_enum {
  NVML_BRAND_UNKNOWN = 0,
  NVML_BRAND_QUADRO = 1,
  NVML_BRAND_TESLA = 2,
  NVML_BRAND_NVS = 3,
  NVML_BRAND_GRID = 4,
  NVML_BRAND_GEFORCE = 5,
  NVML_BRAND_TITAN = 6,
  NVML_BRAND_NVIDIA_VAPPS = 7,
  NVML_BRAND_NVIDIA_VPC = 8,
  NVML_BRAND_NVIDIA_VCS = 9,
  NVML_BRAND_NVIDIA_VWS = 10,
  NVML_BRAND_NVIDIA_CLOUD_GAMING = 11,
  NVML_BRAND_NVIDIA_VGAMING = NVML_BRAND_NVIDIA_CLOUD_GAMING,
  NVML_BRAND_QUADRO_RTX = 12,
  NVML_BRAND_NVIDIA_RTX = 13,
  NVML_BRAND_NVIDIA = 14,
  NVML_BRAND_GEFORCE_RTX = 15,
  NVML_BRAND_TITAN_RTX = 16,
  NVML_BRAND_COUNT = 18,
} nvmlBrandType_t;

typedef unsigned int nvmlDeviceArchitecture_t;
#define NVML_DEVICE_ARCH_KEPLER 2
#define NVML_DEVICE_ARCH_MAXWELL 3
#define NVML_DEVICE_ARCH_PASCAL 4
#define NVML_DEVICE_ARCH_VOLTA 5
#define NVML_DEVICE_ARCH_TURING 6
#define NVML_DEVICE_ARCH_AMPERE 7
#define NVML_DEVICE_ARCH_ADA 8
#define NVML_DEVICE_ARCH_HOPPER 9
#define NVML_DEVICE_ARCH_BLACKWELL 10
#define NVML_DEVICE_ARCH_RUBIN 13
#define NVML_DEVICE_ARCH_UNKNOWN 0xffffffff

typedef enum nvmlTemperatureSensors_enum {
  NVML_TEMPERATURE_GPU = 0, /* the GPU die */
  NVML_TEMPERATURE_COUNT
} nvmlTemperatureSensors_t;

typedef struct {
  unsigned int version;               /* nvmlTemperature_v1 */
  nvmlTemperatureSensors_t sensorType; /* in */
  int temperature;                    /* out: degrees C */
} nvmlTemperature_v1_t;
typedef nvmlTemperature_v1_t nvmlTemperature_t;
#define nvmlTemperature_v1 NVML_STRUCT_VERSION(Temperature, 1)

typedef unsigned int nvmlAffinityScope_t;
#define NVML_AFFINITY_SCOPE_NODE 0   /* NUMA node */
#define NVML_AFFINITY_SCOPE_SOCKET 1 /* processor socket */

/* ---- the functions (versioned names as libnvidia-ml.so.1 exports them) ---- */
/* X(name, parameters) for every entry point gpuslice calls or nvml-emu
 * implements; backend/nvml.c resolves each by name, nvml-emu defines each. */
#define GS_NVML_FUNCTIONS(X)                                                                      \
  X(nvmlInit_v2, (void))                                                                          \
  X(nvmlInitWithFlags, (unsigned int flags))                                                      \
  X(nvmlShutdown, (void))                                                                         \
  X(nvmlSystemGetDriverVersion, (char *version, unsigned int length))                             \
  X(nvmlSystemGetNVMLVersion, (char *version, unsigned int length))                               \
  X(nvmlSystemGetCudaDriverVersion, (int *cudaDriverVersion))                                     \
  X(nvmlSystemGetCudaDriverVersion_v2, (int *cudaDriverVersion))                                  \
  X(nvmlSystemGetProcessName, (unsigned int pid, char *name, unsigned int length))                \
  X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount))                                           \
  X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device))                    \
  X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device))                          \
  X(nvmlDeviceGetHandleByPciBusId_v2, (const char *pciBusId, nvmlDevice_t *device))               \
  X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length))                    \
  X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length))                    \
  X(nvmlDeviceGetSerial, (nvmlDevice_t device, char *serial, unsigned int length))                \
  X(nvmlDeviceGetPciInfo_v3, (nvmlDevice_t device, nvmlPciInfo_t *pci))                           \
  X(nvmlDeviceGetIndex, (nvmlDevice_t device, unsigned int *index))                               \
  X(nvmlDeviceGetMinorNumber, (nvmlDevice_t device, unsigned int *minorNumber))                   \
  X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t *memory))                         \
  X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t *memory))                   \
  X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t *utilization))         \
  X(nvmlDeviceGetComputeRunningProcesses_v3,                                                      \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                     \
  X(nvmlDeviceGetGraphicsRunningProcesses_v3,                                                     \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos))                     \
  X(nvmlDeviceGetMigMode, (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode)) \
  X(nvmlDeviceSetMigMode, (nvmlDevice_t device, unsigned int mode, nvmlReturn_t *activationStatus)) \
  X(nvmlDeviceGetGpuInstanceProfileInfo,                                                          \
    (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_t *info))              \
  X(nvmlDeviceGetGpuInstanceProfileInfoV,                                                         \
    (nvmlDevice_t device, unsigned int profile, nvmlGpuInstanceProfileInfo_v2_t *info))           \
  X(nvmlDeviceGetGpuInstanceProfileInfoByIdV,                                                     \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstanceProfileInfo_v2_t *info))         \
  X(nvmlDeviceGetGpuInstancePossiblePlacements_v2,                                                \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,         \
     unsigned int *count))                                                                        \
  X(nvmlDeviceGetGpuInstanceRemainingCapacity,                                                    \
    (nvmlDevice_t device, unsigned int profileId, unsigned int *count))                           \
  X(nvmlDeviceCreateGpuInstance,                                                                  \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstance))                \
  X(nvmlDeviceCreateGpuInstanceWithPlacement,                                                     \
    (nvmlDevice_t device, unsigned int profileId, const nvmlGpuInstancePlacement_t *placement,    \
     nvmlGpuInstance_t *gpuInstance))                                                             \
  X(nvmlGpuInstanceDestroy, (nvmlGpuInstance_t gpuInstance))                                      \
  X(nvmlDeviceGetGpuInstances,                                                                    \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstance_t *gpuInstances,                \
     unsigned int *count))                                                                        \
  X(nvmlDeviceGetGpuInstanceById, (nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t *gpuInstance)) \
  X(nvmlGpuInstanceGetInfo, (nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t *info))         \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfo,                                                 \
    (nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,                \
     nvmlComputeInstanceProfileInfo_t *info))                                                     \
  X(nvmlGpuInstanceGetComputeInstanceProfileInfoV,                                                \
    (nvmlGpuInstance_t gpuInstance, unsigned int profile, unsigned int engProfile,                \
     nvmlComputeInstanceProfileInfo_v2_t *info))                                                  \
  X(nvmlGpuInstanceGetComputeInstanceRemainingCapacity,                                           \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId, unsigned int *count))                 \
  X(nvmlGpuInstanceGetComputeInstancePossiblePlacements,                                          \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                       \
     nvmlComputeInstancePlacement_t *placements, unsigned int *count))                            \
  X(nvmlGpuInstanceCreateComputeInstance,                                                         \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId, nvmlComputeInstance_t *computeInstance)) \
  X(nvmlGpuInstanceCreateComputeInstanceWithPlacement,                                            \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                       \
     const nvmlComputeInstancePlacement_t *placement, nvmlComputeInstance_t *computeInstance))     \
  X(nvmlComputeInstanceDestroy, (nvmlComputeInstance_t computeInstance))                          \
  X(nvmlGpuInstanceGetComputeInstances,                                                           \
    (nvmlGpuInstance_t gpuInstance, unsigned int profileId,                                       \
     nvmlComputeInstance_t *computeInstances, unsigned int *count))                               \
  X(nvmlGpuInstanceGetComputeInstanceById,                                                        \
    (nvmlGpuInstance_t gpuInstance, unsigned int id, nvmlComputeInstance_t *computeInstance))     \
  X(nvmlComputeInstanceGetInfo_v2, (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)) \
  X(nvmlDeviceIsMigDeviceHandle, (nvmlDevice_t device, unsigned int *isMigDevice))                \
  X(nvmlDeviceGetGpuInstanceId, (nvmlDevice_t device, unsigned int *id))                          \
  X(nvmlDeviceGetComputeInstanceId, (nvmlDevice_t device, unsigned int *id))                      \
  X(nvmlDeviceGetMaxMigDeviceCount, (nvmlDevice_t device, unsigned int *count))                   \
  X(nvmlDeviceGetMigDeviceHandleByIndex, (nvmlDevice_t device, unsigned int index, nvmlDevice_t *migDevice)) \
  X(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, (nvmlDevice_t migDevice, nvmlDevice_t *device)) \
  X(nvmlDeviceGetAttributes_v2, (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes))

/* Prototypes: nvml-emu defines them; backend/nvml.c only takes their types. */
/* The older names libnvidia-ml.so.1 still exports for programs built against
 * older headers (or with NVML_NO_UNVERSIONED_FUNC_DEFS), with their old
 * semantics: nvml-emu defines each. Where the old struct was a prefix of
 * today's, only that prefix is written: PCI info up to pciSubSystemId (36
 * bytes), CI info without placement, attributes with the six engine counts
 * only; the v1 process info is its own type. */
#define GS_NVML_LEGACY_FUNCTIONS(X)                                                               \
  X(nvmlInit, (void))                                                                             \
  X(nvmlDeviceGetCount, (unsigned int *deviceCount))                                              \
  X(nvmlDeviceGetHandleByIndex, (unsigned int index, nvmlDevice_t *device))                       \
  X(nvmlDeviceGetHandleByPciBusId, (const char *pciBusId, nvmlDevice_t *device))                  \
  X(nvmlDeviceGetPciInfo, (nvmlDevice_t device, nvmlPciInfo_t *pci))                              \
  X(nvmlDeviceGetPciInfo_v2, (nvmlDevice_t device, nvmlPciInfo_t *pci))                           \
  X(nvmlDeviceGetComputeRunningProcesses,                                                         \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                  \
  X(nvmlDeviceGetComputeRunningProcesses_v2,                                                      \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                  \
  X(nvmlDeviceGetGraphicsRunningProcesses,                                                        \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v1_t *infos))                  \
  X(nvmlDeviceGetGraphicsRunningProcesses_v2,                                                     \
    (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_v2_t *infos))                  \
  X(nvmlDeviceGetGpuInstancePossiblePlacements,                                                   \
    (nvmlDevice_t device, unsigned int profileId, nvmlGpuInstancePlacement_t *placements,         \
     unsigned int *count))                                                                        \
  X(nvmlComputeInstanceGetInfo, (nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t *info)) \
  X(nvmlDeviceGetAttributes, (nvmlDevice_t device, nvmlDeviceAttributes_t *attributes))

/* Device queries nvml-emu answers with emulated values (docs/nvml-emu.md). */
#define GS_NVML_EMULATED_FUNCTIONS(X)                                                             \
  X(nvmlDeviceGetBrand, (nvmlDevice_t device, nvmlBrandType_t *type))                             \
  X(nvmlDeviceGetArchitecture, (nvmlDevice_t device, nvmlDeviceArchitecture_t *arch))             \
  X(nvmlDeviceGetCudaComputeCapability, (nvmlDevice_t device, int *major, int *minor))            \
  X(nvmlDeviceGetTemperature,                                                                     \
    (nvmlDevice_t device, nvmlTemperatureSensors_t sensorType, unsigned int *temp))               \
  X(nvmlDeviceGetTemperatureV, (nvmlDevice_t device, nvmlTemperature_t *temperature))             \
  X(nvmlDeviceGetPowerUsage, (nvmlDevice_t device, unsigned int *power))                          \
  X(nvmlDeviceGetCpuAffinity, (nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet)) \
  X(nvmlDeviceGetCpuAffinityWithinScope,                                                          \
    (nvmlDevice_t device, unsigned int cpuSetSize, unsigned long *cpuSet, nvmlAffinityScope_t scope))

#define GS__NVML_PROTOTYPE(name, params) nvmlReturn_t name params;
GS_NVML_FUNCTIONS(GS__NVML_PROTOTYPE)
GS_NVML_LEGACY_FUNCTIONS(GS__NVML_PROTOTYPE)
GS_NVML_EMULATED_FUNCTIONS(GS__NVML_PROTOTYPE)
#undef GS__NVML_PROTOTYPE
const char *nvmlErrorString(nvmlReturn_t result);

#endif
