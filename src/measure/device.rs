//! What GPU a figure came from, asked of the NVIDIA driver through `cudarc`. The driver
//! library is loaded at run time, so the binary builds and runs on machines without one.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceFacts {
    pub name: String,
    pub total_bytes: u64,
    pub free_bytes: u64,
    /// As the driver reports it, e.g. `12.8`.
    pub driver_version: String,
    /// How many CUDA devices the driver sees (the figures come from device 0).
    pub device_count: u32,
}

/// Device 0's facts, or a plain sentence saying why there are none.
pub fn probe() -> Result<DeviceFacts, String> {
    // cudarc panics when a driver symbol is missing; a probe must only ever answer.
    std::panic::catch_unwind(probe_driver).unwrap_or_else(|_| Err("the NVIDIA driver library failed to load".into()))
}

fn probe_driver() -> Result<DeviceFacts, String> {
    use cudarc::driver::{result, sys};
    // SAFETY: only checks whether the library can be opened.
    if !unsafe { sys::is_culib_present() } {
        return Err("no NVIDIA driver found (libcuda could not be loaded)".into());
    }
    fn failed(what: &'static str) -> impl Fn(result::DriverError) -> String {
        move |e| format!("the NVIDIA driver failed to {what}: {e:?}")
    }
    result::init().map_err(failed("initialise"))?;
    let mut version = 0;
    // SAFETY: writes one int through a valid pointer.
    unsafe { sys::cuDriverGetVersion(&mut version) }.result().map_err(failed("report its version"))?;
    let device_count = result::device::get_count().map_err(failed("count devices"))?;
    if device_count < 1 {
        return Err("the NVIDIA driver sees no CUDA device".into());
    }
    let device = result::device::get(0).map_err(failed("open device 0"))?;
    let name = result::device::get_name(device).map_err(failed("name device 0"))?;
    // SAFETY: `device` came from `device::get`.
    let total = unsafe { result::device::total_mem(device) }.map_err(failed("report total memory"))?;
    let context = cudarc::driver::CudaContext::new(0).map_err(failed("create a context"))?;
    let (free, _) = context.mem_get_info().map_err(failed("report free memory"))?;
    Ok(DeviceFacts {
        name,
        total_bytes: total as u64,
        free_bytes: free as u64,
        driver_version: format!("{}.{}", version / 1000, (version % 1000) / 10),
        device_count: device_count as u32,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_probe_answers_with_facts_or_a_reason_and_never_panics() {
        match super::probe() {
            Ok(facts) => assert!(facts.total_bytes >= facts.free_bytes && facts.device_count >= 1, "{facts:?}"),
            Err(reason) => assert!(reason.contains("NVIDIA driver"), "{reason}"),
        }
    }
}
