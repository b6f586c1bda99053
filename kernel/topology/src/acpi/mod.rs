//! ACPI table parsing for topology discovery: RSDP, RSDT/XSDT walking through a
//! caller-supplied [`PhysRead`], and the MADT, SRAT and SLIT parsers. Every parser is
//! total: malformed input gives an [`AcpiError`] naming the table, entry and field,
//! never a panic.

mod bytes;
pub mod error;
pub mod firmware;
pub mod madt;
pub mod rsdp;
pub mod sdt;
pub mod slit;
pub mod srat;
pub mod tables;

pub use error::{AcpiError, Table};
pub use firmware::Firmware;
pub use madt::{InterruptOverride, IoApic, LapicNmi, Madt, MadtCpu, parse_madt};
pub use rsdp::{Rsdp, find_rsdp, parse_rsdp};
pub use sdt::{SdtHeader, validate_sdt};
pub use slit::{Slit, parse_slit};
pub use srat::{Srat, SratCpu, SratMemory, parse_srat};
pub use tables::{
    AcpiTables, MemoryImage, PhysRead, PhysReadError, load_tables, read_table, scan_bios_area,
};
