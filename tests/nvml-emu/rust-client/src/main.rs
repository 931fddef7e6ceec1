//! An NVML client built on bindings no one on the gpuslice team wrote: the
//! nvml-wrapper crate for what it covers (devices, memory, PCI, processes),
//! and nvml-wrapper-sys, bindgen's output from NVIDIA's own nvml.h, for the
//! MIG calls nvml-wrapper 0.9 lacks. So every struct it passes has NVIDIA's
//! layout, every version and enum value NVIDIA's numbers. It drives the
//! library named by its first argument (nvml-emu in the test) as a MIG tool
//! would, and checks what comes back against NVIDIA's documented facts for an
//! A100-SXM4-40GB (GPU 0) and an H100 80GB HBM3 (GPU 1).
//!
//! usage: gs-nvml-rust-client LIBRARY mig|procs
//! Prints one line per failed check and `N passed, N failed`; exits 1 on a failure.

use libloading::Symbol;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::*;
use std::ffi::{CStr, OsStr};
use std::mem;
use std::os::raw::c_uint;
use std::ptr;

const MIB: u64 = 1024 * 1024;

struct Checks {
    passed: u32,
    failed: u32,
}

impl Checks {
    fn check(&mut self, ok: bool, what: &str) {
        if ok {
            self.passed += 1;
        } else {
            self.failed += 1;
            println!("FAIL: {}", what);
        }
    }

    fn rc(&mut self, got: nvmlReturn_t, want: nvmlReturn_t, what: &str) {
        self.check(got == want, &format!("{}: returned {}, want {}", what, got, want));
    }
}

/// NVIDIA's NVML_STRUCT_VERSION(type, ver): sizeof(type) | ver << 24.
fn struct_version<T>(ver: u32) -> c_uint {
    (mem::size_of::<T>() as u32) | (ver << 24)
}

fn cstr(buf: &[std::os::raw::c_char]) -> String {
    unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned()
}

/// One GPU model's expected MIG facts (NVIDIA's MIG user guide tables).
struct Model {
    name: &'static str,
    memory_mib: u64,
    /// (NVML profile enum, profile id, slices, instances, MiB, name)
    profiles: &'static [(u32, u32, u32, u32, u64, &'static str)],
    one_slice_ci_name: &'static str,
}

const A100: Model = Model {
    name: "NVIDIA A100-SXM4-40GB",
    memory_mib: 40537, // nvidia-smi on a non-MIG A100-SXM4-40GB
    profiles: &[
        (NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 4864, "MIG 1g.5gb"),
        (NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 9856, "MIG 2g.10gb"),
        (NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 19968, "MIG 3g.20gb"),
        (NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 19968, "MIG 4g.20gb"),
        (NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 40192, "MIG 7g.40gb"),
    ],
    one_slice_ci_name: "MIG 1c.3g.20gb",
};

const H100: Model = Model {
    name: "NVIDIA H100 80GB HBM3",
    memory_mib: 81559, // nvidia-smi on a non-MIG H100 80GB HBM3
    profiles: &[
        (NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 9984, "MIG 1g.10gb"),
        (NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 20096, "MIG 2g.20gb"),
        (NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 40448, "MIG 3g.40gb"),
        (NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 40448, "MIG 4g.40gb"),
        (NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 81152, "MIG 7g.80gb"),
    ],
    one_slice_ci_name: "MIG 1c.3g.40gb",
};

/// The two calls nvml-wrapper-sys 0.7 (API version 11) predates; their
/// argument types are still the bindings' (NVIDIA's) structs.
type CreateCiWithPlacement = unsafe extern "C" fn(
    nvmlGpuInstance_t,
    c_uint,
    *const nvmlComputeInstancePlacement_t,
    *mut nvmlComputeInstance_t,
) -> nvmlReturn_t;
type CiPossiblePlacements = unsafe extern "C" fn(
    nvmlGpuInstance_t,
    c_uint,
    *mut nvmlComputeInstancePlacement_t,
    *mut c_uint,
) -> nvmlReturn_t;

fn devices_through_wrapper(t: &mut Checks, nvml: &Nvml, models: &[&Model]) {
    t.check(nvml.device_count().ok() == Some(models.len() as u32), "nvmlDeviceGetCount_v2: one device per emulated GPU");
    t.check(nvml.sys_driver_version().map(|v| !v.is_empty()).unwrap_or(false), "nvmlSystemGetDriverVersion");
    // "<CUDA major>.<driver>", as NVML's own: 13.580.65.06 on the default driver.
    let cuda_major = nvml.sys_cuda_driver_version().map(|v| v / 1000).unwrap_or(0);
    let driver = nvml.sys_driver_version().unwrap_or_default();
    t.check(
        nvml.sys_nvml_version().map(|v| v == format!("{}.{}", cuda_major, driver)).unwrap_or(false),
        "nvmlSystemGetNVMLVersion: <CUDA major>.<driver version>",
    );
    t.check(nvml.sys_cuda_driver_version().map(|v| v >= 11000).unwrap_or(false), "nvmlSystemGetCudaDriverVersion_v2");
    for (i, m) in models.iter().enumerate() {
        let d = match nvml.device_by_index(i as u32) {
            Ok(d) => d,
            Err(e) => {
                t.check(false, &format!("nvmlDeviceGetHandleByIndex_v2({}): {:?}", i, e));
                continue;
            }
        };
        t.check(d.name().ok().as_deref() == Some(m.name), &format!("GPU {} name {:?}", i, d.name()));
        let uuid = d.uuid().unwrap_or_default();
        t.check(uuid.starts_with("GPU-") && uuid.len() == 40, &format!("GPU {} UUID {}", i, uuid));
        t.check(d.index().ok() == Some(i as u32), "nvmlDeviceGetIndex");
        match d.memory_info() {
            Ok(mem) => t.check(mem.total == m.memory_mib * MIB && mem.free + mem.used == mem.total,
                               &format!("GPU {} memory {:?}", i, (mem.total, mem.free, mem.used))),
            Err(e) => t.check(false, &format!("nvmlDeviceGetMemoryInfo: {:?}", e)),
        }
        match d.pci_info() {
            Ok(pci) => {
                t.check(pci.bus_id.len() == 16 && pci.bus_id.starts_with("00000000:") && pci.domain == 0,
                        &format!("GPU {} PCI bus id {}", i, pci.bus_id));
                t.check(pci.pci_device_id & 0xffff == 0x10de, "pciDeviceId names NVIDIA's vendor id 0x10de");
                let by_pci = nvml.device_by_pci_bus_id(pci.bus_id.as_str()).and_then(|x| x.index());
                t.check(by_pci.ok() == Some(i as u32), "nvmlDeviceGetHandleByPciBusId_v2 finds the same GPU");
            }
            Err(e) => t.check(false, &format!("nvmlDeviceGetPciInfo_v3: {:?}", e)),
        }
        let by_uuid = nvml.device_by_uuid(uuid.as_str()).and_then(|x| x.index());
        t.check(by_uuid.ok() == Some(i as u32), "nvmlDeviceGetHandleByUUID finds the same GPU");
        t.check(d.minor_number().ok() == Some(i as u32), "nvmlDeviceGetMinorNumber");
        t.check(d.serial().map(|s| !s.is_empty()).unwrap_or(false), "nvmlDeviceGetSerial");
        t.check(d.utilization_rates().is_ok(), "nvmlDeviceGetUtilizationRates with MIG off");
        // An entry point nvml-emu does not emulate: NVML's NOT_SUPPORTED, no crash.
        t.check(matches!(d.fan_speed(0), Err(NvmlError::NotSupported)), "nvmlDeviceGetFanSpeed_v2: NOT_SUPPORTED");
        t.check(matches!(d.enforced_power_limit(), Err(NvmlError::NotSupported)), "nvmlDeviceGetEnforcedPowerLimit: NOT_SUPPORTED");
    }
    t.check(matches!(nvml.device_by_index(models.len() as u32), Err(NvmlError::InvalidArg)), "GetHandleByIndex past the count: INVALID_ARGUMENT");
    t.check(matches!(nvml.device_by_uuid("GPU-00000000-0000-0000-0000-000000000000"), Err(NvmlError::NotFound)), "GetHandleByUUID of no GPU: NOT_FOUND");
    t.check(matches!(nvml.device_by_pci_bus_id("00000000:FF:00.0"), Err(NvmlError::NotFound)), "GetHandleByPciBusId of no GPU: NOT_FOUND");
}

/// Profiles and placements through the V call with NVIDIA's v2 struct and version.
fn gi_profiles(t: &mut Checks, lib: &NvmlLib, dev: nvmlDevice_t, m: &Model) {
    for &(e, id, slices, count, mib, name) in m.profiles {
        let mut info: nvmlGpuInstanceProfileInfo_v2_t = unsafe { mem::zeroed() };
        info.version = struct_version::<nvmlGpuInstanceProfileInfo_v2_t>(2);
        let rc = unsafe { lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, e, &mut info) };
        t.rc(rc, nvmlReturn_enum_NVML_SUCCESS, &format!("GetGpuInstanceProfileInfoV({})", name));
        t.check(info.id == id && info.sliceCount == slices && info.instanceCount == count
                    && info.memorySizeMB == mib && cstr(&info.name) == name,
                &format!("{} profile {}: id {} slices {} instances {} MiB {} name {:?}", m.name, name,
                         info.id, info.sliceCount, info.instanceCount, info.memorySizeMB, cstr(&info.name)));
        let mut v1: nvmlGpuInstanceProfileInfo_t = unsafe { mem::zeroed() };
        let rc = unsafe { lib.nvmlDeviceGetGpuInstanceProfileInfo(dev, e, &mut v1) };
        t.check(rc == 0 && v1.id == id && v1.memorySizeMB == mib, &format!("GetGpuInstanceProfileInfo (v1 struct) {}", name));

        let mut n: c_uint = 0;
        let rc = unsafe { lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, id, ptr::null_mut(), &mut n) };
        t.check(rc == 0 && n == count, &format!("{} placements count query: rc {} count {}", name, rc, n));
        let mut p = vec![nvmlGpuInstancePlacement_t { start: 99, size: 99 }; n as usize];
        let rc = unsafe { lib.nvmlDeviceGetGpuInstancePossiblePlacements_v2(dev, id, p.as_mut_ptr(), &mut n) };
        let size = if slices == 3 { 4 } else if slices == 7 { 8 } else { slices };
        t.check(rc == 0 && p.iter().all(|x| x.size == size && x.start % size == 0),
                &format!("{} placements {:?}", name, p.iter().map(|x| (x.start, x.size)).collect::<Vec<_>>()));
        let mut cap: c_uint = 0;
        let rc = unsafe { lib.nvmlDeviceGetGpuInstanceRemainingCapacity(dev, id, &mut cap) };
        t.check(rc == 0 && cap == count, &format!("{} remaining capacity {} on an empty GPU", name, cap));
    }
    // What NVML's header says of bad arguments.
    let mut info: nvmlGpuInstanceProfileInfo_v2_t = unsafe { mem::zeroed() };
    info.version = struct_version::<nvmlGpuInstanceProfileInfo_v2_t>(1);
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, NVML_GPU_INSTANCE_PROFILE_1_SLICE, &mut info) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "ProfileInfoV with a wrong struct version");
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, NVML_GPU_INSTANCE_PROFILE_1_SLICE, ptr::null_mut()) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "ProfileInfoV with NULL info");
    info.version = struct_version::<nvmlGpuInstanceProfileInfo_v2_t>(2);
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceProfileInfoV(dev, 1000, &mut info) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "ProfileInfoV with a profile past NVML_GPU_INSTANCE_PROFILE_COUNT");
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceRemainingCapacity(dev, 19, ptr::null_mut()) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "RemainingCapacity with NULL count");
}

fn gi_info(lib: &NvmlLib, gi: nvmlGpuInstance_t) -> (nvmlReturn_t, nvmlGpuInstanceInfo_t) {
    let mut info: nvmlGpuInstanceInfo_t = unsafe { mem::zeroed() };
    let rc = unsafe { lib.nvmlGpuInstanceGetInfo(gi, &mut info) };
    (rc, info)
}

/// MIG mode, then GIs and CIs with and without placement, the MIG devices
/// they make, bad inputs, and destroying everything again.
fn mig(t: &mut Checks, nvml: &Nvml, lib: &NvmlLib, i: u32, m: &Model) {
    let d = match nvml.device_by_index(i) {
        Ok(d) => d,
        Err(_) => return t.check(false, "device_by_index"),
    };
    let dev = unsafe { d.handle() };
    let (mut cur, mut pend) = (9, 9);
    let rc = unsafe { lib.nvmlDeviceGetMigMode(dev, &mut cur, &mut pend) };
    t.check(rc == 0 && cur == NVML_DEVICE_MIG_DISABLE && pend == NVML_DEVICE_MIG_DISABLE, "GetMigMode: off at first");
    let mut cap: c_uint = 9;
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceRemainingCapacity(dev, 19, &mut cap) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED, "RemainingCapacity with MIG off");
    let mut act: nvmlReturn_t = 999;
    let rc = unsafe { lib.nvmlDeviceSetMigMode(dev, NVML_DEVICE_MIG_ENABLE, &mut act) };
    t.check(rc == 0 && act == 0, &format!("SetMigMode(ENABLE) on an idle GPU: rc {} activation {}", rc, act));
    let rc = unsafe { lib.nvmlDeviceGetMigMode(dev, &mut cur, &mut pend) };
    t.check(rc == 0 && cur == NVML_DEVICE_MIG_ENABLE && pend == NVML_DEVICE_MIG_ENABLE, "GetMigMode: on");
    let rc = unsafe { lib.nvmlDeviceSetMigMode(dev, 7, &mut act) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "SetMigMode(7)");
    let mut max: c_uint = 0;
    let rc = unsafe { lib.nvmlDeviceGetMaxMigDeviceCount(dev, &mut max) };
    t.check(rc == 0 && max == 7, &format!("GetMaxMigDeviceCount {}", max));

    gi_profiles(t, lib, dev, m);

    // A 3g GI where NVML chooses (4:4 on an empty GPU, as a rule), then a 1g
    // GI placed at a start the 3g left free.
    let mut gi3: nvmlGpuInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstance(dev, 9, &mut gi3) };
    t.rc(rc, 0, "CreateGpuInstance(3g)");
    let (rc, info3) = gi_info(lib, gi3);
    t.check(rc == 0 && info3.profileId == 9 && info3.placement.size == 4 && info3.device == dev,
            &format!("GpuInstanceGetInfo(3g): id {} profile {} placement {}+{}", info3.id, info3.profileId,
                     info3.placement.start, info3.placement.size));
    let mut gi1: nvmlGpuInstance_t = ptr::null_mut();
    let start1 = if info3.placement.start == 4 { 0 } else { 6 };
    let at = nvmlGpuInstancePlacement_t { start: start1, size: 1 };
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 19, &at, &mut gi1) };
    t.rc(rc, 0, "CreateGpuInstanceWithPlacement(1g)");
    let (rc, info1) = gi_info(lib, gi1);
    t.check(rc == 0 && info1.profileId == 19 && info1.placement.start == start1 && info1.placement.size == 1,
            &format!("GpuInstanceGetInfo(1g): placement {}+{}", info1.placement.start, info1.placement.size));
    // Bad inputs: NVML's documented codes.
    let mut gix: nvmlGpuInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 19, &at, &mut gix) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES, "a second 1g at the same start");
    let odd = nvmlGpuInstancePlacement_t { start: 1, size: 2 };
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstanceWithPlacement(dev, 14, &odd, &mut gix) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "2g at the illegal start 1");
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstance(dev, 0, &mut gix) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES, "7g on a GPU that has a 3g and a 1g");
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstance(dev, 9, ptr::null_mut()) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "CreateGpuInstance with NULL out");
    let rc = unsafe { lib.nvmlDeviceCreateGpuInstance(dev, 12345, &mut gix) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "CreateGpuInstance with an unknown profile id");
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceById(dev, 13, &mut gix) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_NOT_FOUND, "GetGpuInstanceById of no instance");
    let mut gi_again: nvmlGpuInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceById(dev, info3.id, &mut gi_again) };
    t.check(rc == 0 && gi_info(lib, gi_again).1.id == info3.id, "GetGpuInstanceById finds the 3g");
    let mut list = vec![ptr::null_mut(); 7];
    let mut n: c_uint = 0;
    let rc = unsafe { lib.nvmlDeviceGetGpuInstances(dev, 19, list.as_mut_ptr(), &mut n) };
    t.check(rc == 0 && n == 1 && gi_info(lib, list[0]).1.id == info1.id, &format!("GetGpuInstances(1g): {}", n));

    // CIs: the 3g GI's 1c profile twice, once where NVML chooses and once at start 2.
    let mut ci_info: nvmlComputeInstanceProfileInfo_v2_t = unsafe { mem::zeroed() };
    ci_info.version = struct_version::<nvmlComputeInstanceProfileInfo_v2_t>(2);
    let rc = unsafe {
        lib.nvmlGpuInstanceGetComputeInstanceProfileInfoV(gi3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                          NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &mut ci_info)
    };
    t.check(rc == 0 && ci_info.sliceCount == 1 && ci_info.instanceCount == 3 && cstr(&ci_info.name) == m.one_slice_ci_name,
            &format!("CI profile 1c of a 3g: rc {} slices {} instances {} name {:?}", rc, ci_info.sliceCount,
                     ci_info.instanceCount, cstr(&ci_info.name)));
    ci_info.version = 0;
    let rc = unsafe {
        lib.nvmlGpuInstanceGetComputeInstanceProfileInfoV(gi3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                          NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &mut ci_info)
    };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "CI ProfileInfoV with version 0");
    let ci_profile = {
        let mut v1: nvmlComputeInstanceProfileInfo_t = unsafe { mem::zeroed() };
        let rc = unsafe {
            lib.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi3, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
                                                             NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &mut v1)
        };
        t.rc(rc, 0, "GetComputeInstanceProfileInfo (v1 struct)");
        v1.id
    };
    let create_at: Symbol<CreateCiWithPlacement> =
        match unsafe { lib.__library.get(b"nvmlGpuInstanceCreateComputeInstanceWithPlacement\0") } {
            Ok(s) => s,
            Err(_) => return t.check(false, "nvmlGpuInstanceCreateComputeInstanceWithPlacement is exported"),
        };
    let ci_placements: Symbol<CiPossiblePlacements> =
        match unsafe { lib.__library.get(b"nvmlGpuInstanceGetComputeInstancePossiblePlacements\0") } {
            Ok(s) => s,
            Err(_) => return t.check(false, "nvmlGpuInstanceGetComputeInstancePossiblePlacements is exported"),
        };
    let mut cp = vec![nvmlComputeInstancePlacement_t { start: 99, size: 99 }; 8];
    let mut n: c_uint = 8;
    let rc = unsafe { ci_placements(gi3, ci_profile, cp.as_mut_ptr(), &mut n) };
    t.check(rc == 0 && n == 3 && (0..3).all(|k| cp[k as usize].start == k && cp[k as usize].size == 1),
            &format!("CI placements of 1c in a 3g: rc {} {:?}", rc, cp.iter().take(n as usize).map(|x| (x.start, x.size)).collect::<Vec<_>>()));
    let mut ci_a: nvmlComputeInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlGpuInstanceCreateComputeInstance(gi3, ci_profile, &mut ci_a) };
    t.rc(rc, 0, "CreateComputeInstance(1c)");
    let mut ci_b: nvmlComputeInstance_t = ptr::null_mut();
    let at2 = nvmlComputeInstancePlacement_t { start: 2, size: 1 };
    let rc = unsafe { create_at(gi3, ci_profile, &at2, &mut ci_b) };
    t.rc(rc, 0, "CreateComputeInstanceWithPlacement(1c at 2)");
    let rc = unsafe { create_at(gi3, ci_profile, &at2, &mut ci_b) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_RESOURCES, "a second 1c at start 2");
    let mut cinfo: nvmlComputeInstanceInfo_t = unsafe { mem::zeroed() };
    let rc = unsafe { lib.nvmlComputeInstanceGetInfo_v2(ci_b, &mut cinfo) };
    t.check(rc == 0 && cinfo.placement.start == 2 && cinfo.gpuInstance == gi3 && cinfo.device == dev && cinfo.profileId == ci_profile,
            &format!("ComputeInstanceGetInfo_v2: rc {} start {}", rc, cinfo.placement.start));
    let ci_b_id = cinfo.id;
    let mut cis = vec![ptr::null_mut(); 8];
    let mut n: c_uint = 0;
    let rc = unsafe { lib.nvmlGpuInstanceGetComputeInstances(gi3, ci_profile, cis.as_mut_ptr(), &mut n) };
    t.check(rc == 0 && n == 2, &format!("GetComputeInstances: rc {} count {}", rc, n));
    let mut ci_found: nvmlComputeInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlGpuInstanceGetComputeInstanceById(gi3, ci_b_id, &mut ci_found) };
    t.rc(rc, 0, "GetComputeInstanceById");
    let rc = unsafe { lib.nvmlGpuInstanceGetComputeInstanceById(gi3, 7, &mut ci_found) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_NOT_FOUND, "GetComputeInstanceById of no instance");
    let mut gi1_ci: nvmlComputeInstance_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlGpuInstanceCreateComputeInstance(gi1, 0, &mut gi1_ci) };
    t.rc(rc, 0, "CreateComputeInstance(1g's whole GI)");

    // MIG devices: one per CI, ascending GI id then CI id.
    let mut seen = Vec::new();
    for k in 0..max {
        let mut md: nvmlDevice_t = ptr::null_mut();
        let rc = unsafe { lib.nvmlDeviceGetMigDeviceHandleByIndex(dev, k, &mut md) };
        if rc == nvmlReturn_enum_NVML_ERROR_NOT_FOUND {
            continue;
        }
        t.rc(rc, 0, "GetMigDeviceHandleByIndex");
        let (mut is_mig, mut gid, mut cid) = (0, 99, 99);
        let mut parent: nvmlDevice_t = ptr::null_mut();
        unsafe {
            t.rc(lib.nvmlDeviceIsMigDeviceHandle(md, &mut is_mig), 0, "IsMigDeviceHandle");
            t.rc(lib.nvmlDeviceGetGpuInstanceId(md, &mut gid), 0, "GetGpuInstanceId");
            t.rc(lib.nvmlDeviceGetComputeInstanceId(md, &mut cid), 0, "GetComputeInstanceId");
            t.rc(lib.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(md, &mut parent), 0, "GetDeviceHandleFromMigDeviceHandle");
        }
        t.check(is_mig == 1 && parent == dev, "a MIG device handle names its parent GPU");
        let migd = unsafe { Device::new(md, nvml) };
        let uuid = migd.uuid().unwrap_or_default();
        t.check(uuid.starts_with("MIG-") && uuid.len() == 40, &format!("MIG device UUID {}", uuid));
        let by_uuid = nvml.device_by_uuid(uuid.as_str()).map(|x| unsafe { x.handle() });
        t.check(by_uuid.ok() == Some(md), "GetHandleByUUID(MIG-...) finds the MIG device");
        let gi_mib = if gid == info1.id { m.profiles[0].4 } else { m.profiles[2].4 };
        t.check(migd.memory_info().map(|x| x.total).ok() == Some(gi_mib * MIB), "a MIG device's memory is its GI's");
        t.check(migd.name().map(|x| x.starts_with(m.name)).unwrap_or(false), "a MIG device's name starts with its GPU's");
        seen.push((gid, cid));
    }
    let mut sorted = seen.clone();
    sorted.sort();
    t.check(seen.len() == 3 && seen == sorted, &format!("MIG devices by index: {:?}", seen));
    let mut md: nvmlDevice_t = ptr::null_mut();
    let rc = unsafe { lib.nvmlDeviceGetMigDeviceHandleByIndex(dev, max, &mut md) };
    t.rc(rc, nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "GetMigDeviceHandleByIndex at the max count");
    let (mut gid, mut is_mig) = (0, 9);
    unsafe {
        t.rc(lib.nvmlDeviceGetGpuInstanceId(dev, &mut gid), nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "GetGpuInstanceId of a GPU handle");
        t.rc(lib.nvmlDeviceIsMigDeviceHandle(dev, &mut is_mig), 0, "IsMigDeviceHandle of a GPU");
    }
    t.check(is_mig == 0, "a GPU handle is not a MIG device handle");

    // Destroy: a GI with CIs is IN_USE; CIs first, then GIs.
    unsafe {
        t.rc(lib.nvmlGpuInstanceDestroy(gi3), nvmlReturn_enum_NVML_ERROR_IN_USE, "destroy a GI that has CIs");
        t.rc(lib.nvmlComputeInstanceDestroy(ci_a), 0, "ComputeInstanceDestroy");
        t.rc(lib.nvmlComputeInstanceDestroy(ci_b), 0, "ComputeInstanceDestroy (placed)");
        t.rc(lib.nvmlComputeInstanceDestroy(ci_b), nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "destroy a destroyed CI");
        t.rc(lib.nvmlComputeInstanceDestroy(gi1_ci), 0, "ComputeInstanceDestroy (1g)");
        t.rc(lib.nvmlGpuInstanceDestroy(gi3), 0, "GpuInstanceDestroy(3g)");
        t.rc(lib.nvmlGpuInstanceDestroy(gi1), 0, "GpuInstanceDestroy(1g)");
        t.rc(lib.nvmlGpuInstanceDestroy(gi1), nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "destroy a destroyed GI");
        t.rc(lib.nvmlGpuInstanceDestroy(ptr::null_mut()), nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT, "GpuInstanceDestroy(NULL)");
    }
    let mut n: c_uint = 9;
    let rc = unsafe { lib.nvmlDeviceGetGpuInstances(dev, 9, list.as_mut_ptr(), &mut n) };
    t.check(rc == 0 && n == 0, "no GI left");
    let mut cap: c_uint = 0;
    let rc = unsafe { lib.nvmlDeviceGetGpuInstanceRemainingCapacity(dev, 0, &mut cap) };
    t.check(rc == 0 && cap == 1, "a 7g fits again");
    let rc = unsafe { lib.nvmlDeviceSetMigMode(dev, NVML_DEVICE_MIG_DISABLE, &mut act) };
    t.check(rc == 0 && act == 0, "SetMigMode(DISABLE) on an idle GPU");
}

/// Process lists through nvml-wrapper (_v3, NVIDIA's nvmlProcessInfo_t), on a
/// machine where the test added pid 4242 (1000 MiB) and 4343 (2000 MiB) to GPU 0.
fn procs(t: &mut Checks, nvml: &Nvml) {
    let d = match nvml.device_by_index(0) {
        Ok(d) => d,
        Err(_) => return t.check(false, "device_by_index(0)"),
    };
    match d.running_compute_processes() {
        Ok(list) => {
            let got: Vec<(u32, String)> = list.iter().map(|p| (p.pid, format!("{:?}", p.used_gpu_memory))).collect();
            t.check(list.len() == 2 && list[0].pid == 4242 && list[1].pid == 4343, &format!("compute processes {:?}", got));
            let mem: Vec<String> = list.iter().map(|p| format!("{:?}", p.used_gpu_memory)).collect();
            t.check(mem == vec![format!("Used({})", 1000 * MIB), format!("Used({})", 2000 * MIB)],
                    &format!("process memory {:?}", mem));
        }
        Err(e) => t.check(false, &format!("nvmlDeviceGetComputeRunningProcesses_v3: {:?}", e)),
    }
    t.check(d.running_compute_processes_count().ok() == Some(2), "process count query");
    t.check(d.running_graphics_processes().map(|l| l.is_empty()).unwrap_or(false), "no graphics processes");
    match d.memory_info() {
        Ok(m) => t.check(m.used == 3000 * MIB, &format!("used memory {} MiB", m.used / MIB)),
        Err(e) => t.check(false, &format!("memory_info: {:?}", e)),
    }
    t.check(nvml.sys_process_name(4242, 64).map(|n| !n.is_empty()).unwrap_or(false), "nvmlSystemGetProcessName");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 || (args[2] != "mig" && args[2] != "procs") {
        eprintln!("usage: gs-nvml-rust-client LIBRARY mig|procs");
        std::process::exit(2);
    }
    let path = OsStr::new(&args[1]);
    let mut t = Checks { passed: 0, failed: 0 };
    let nvml = match Nvml::builder().lib_path(path).init() {
        Ok(n) => n,
        Err(e) => {
            println!("FAIL: nvmlInit_v2 through nvml-wrapper: {:?}", e);
            println!("0 passed, 1 failed");
            std::process::exit(1);
        }
    };
    // The same library again for the raw calls: dlopen hands back the same
    // instance, so it is initialized already.
    let lib = match unsafe { NvmlLib::new(path) } {
        Ok(l) => l,
        Err(e) => {
            println!("FAIL: nvml-wrapper-sys cannot load {}: {}", args[1], e);
            std::process::exit(1);
        }
    };
    if args[2] == "mig" {
        devices_through_wrapper(&mut t, &nvml, &[&A100, &H100]);
        mig(&mut t, &nvml, &lib, 0, &A100);
        mig(&mut t, &nvml, &lib, 1, &H100);
    } else {
        procs(&mut t, &nvml);
    }
    t.check(nvml.shutdown().is_ok(), "nvmlShutdown");
    println!("{} passed, {} failed", t.passed, t.failed);
    std::process::exit(if t.failed == 0 { 0 } else { 1 });
}
