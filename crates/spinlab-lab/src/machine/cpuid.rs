//! The CPU's name, from cpuid: the brand string `spinlab info` shows as the CPU model.

/// The CPU's name as cpuid's brand string gives it, if it has one.
pub fn brand() -> Option<String> {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::__cpuid_count;
        if __cpuid_count(0x8000_0000, 0).eax < 0x8000_0004 {
            return None;
        }
        let mut bytes = Vec::with_capacity(48);
        for leaf in 0x8000_0002u32..=0x8000_0004 {
            let r = __cpuid_count(leaf, 0);
            for reg in [r.eax, r.ebx, r.ecx, r.edx] {
                bytes.extend_from_slice(&reg.to_le_bytes());
            }
        }
        let text = String::from_utf8_lossy(&bytes);
        let name = text.trim_matches(char::from(0)).trim();
        (!name.is_empty()).then(|| name.to_string())
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}
