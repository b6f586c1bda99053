//! TEMPORARY: replaced by glue to topology::acpi
pub struct AcpiSummary {
    pub madt_cpus: usize,
    pub rsdp: u64,
}
pub fn probe(rsdp: Option<u64>, _off: u64) -> AcpiSummary {
    AcpiSummary {
        madt_cpus: 0,
        rsdp: rsdp.unwrap_or(0),
    }
}
