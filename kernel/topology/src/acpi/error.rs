//! [`AcpiError`]: every way an ACPI table can be unusable, naming the table, the entry
//! and the field, e.g. `SRAT: entry 3 (x2APIC affinity) at offset 0x48 is truncated:
//! length 24 but 20 bytes remain`.

use core::fmt;

/// Which table an error is about. Displays as the name used in the ACPI spec (the
/// MADT's signature is "APIC", the FADT's "FACP").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    /// Root System Description Pointer.
    Rsdp,
    /// Root System Description Table (32-bit pointers).
    Rsdt,
    /// Extended System Description Table (64-bit pointers).
    Xsdt,
    /// Multiple APIC Description Table ("APIC").
    Madt,
    /// System Resource Affinity Table.
    Srat,
    /// System Locality Information Table.
    Slit,
    /// Any other table, by signature.
    Other([u8; 4]),
}

impl Table {
    /// The table for a signature.
    pub fn from_signature(sig: [u8; 4]) -> Table {
        match &sig {
            b"RSDT" => Table::Rsdt,
            b"XSDT" => Table::Xsdt,
            b"APIC" => Table::Madt,
            b"SRAT" => Table::Srat,
            b"SLIT" => Table::Slit,
            _ => Table::Other(sig),
        }
    }

    /// The signature in the table header ("APIC" for the MADT; "RSD " for the RSDP).
    pub fn signature(self) -> [u8; 4] {
        match self {
            Table::Rsdp => *b"RSD ",
            Table::Rsdt => *b"RSDT",
            Table::Xsdt => *b"XSDT",
            Table::Madt => *b"APIC",
            Table::Srat => *b"SRAT",
            Table::Slit => *b"SLIT",
            Table::Other(s) => s,
        }
    }
}

/// Prints 4 signature bytes, escaping non-printable ones.
pub(crate) fn write_sig(f: &mut fmt::Formatter<'_>, s: &[u8; 4]) -> fmt::Result {
    for &c in s {
        if c.is_ascii_graphic() || c == b' ' {
            write!(f, "{}", c as char)?;
        } else {
            write!(f, "\\x{c:02x}")?;
        }
    }
    Ok(())
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Table::Rsdp => f.write_str("RSDP"),
            Table::Rsdt => f.write_str("RSDT"),
            Table::Xsdt => f.write_str("XSDT"),
            Table::Madt => f.write_str("MADT"),
            Table::Srat => f.write_str("SRAT"),
            Table::Slit => f.write_str("SLIT"),
            Table::Other(s) => write_sig(f, s),
        }
    }
}

/// Errors of the ACPI parsers and of table discovery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AcpiError {
    /// Fewer bytes than a fixed part of the table needs.
    Truncated {
        table: Table,
        what: &'static str,
        need: usize,
        have: usize,
    },
    /// The signature is not the expected one.
    BadSignature { table: Table, found: [u8; 4] },
    /// The header's length field is below the header size or beyond the bytes read.
    BadLength {
        table: Table,
        length: u64,
        min: usize,
        available: usize,
    },
    /// The bytes of the table (or of the RSDP's first 20 bytes) do not sum to 0.
    Checksum { table: Table, sum: u8 },
    /// The RSDP's extended checksum (ACPI 2.0+, whole structure) does not sum to 0.
    ExtendedChecksum { sum: u8 },
    /// A structure entry runs past the end of the table.
    EntryTruncated {
        table: Table,
        index: usize,
        kind: &'static str,
        offset: usize,
        length: usize,
        remain: usize,
    },
    /// A structure entry's length is below the minimum of its type (or below 2).
    EntryTooShort {
        table: Table,
        index: usize,
        kind: &'static str,
        offset: usize,
        length: usize,
        min: usize,
    },
    /// The RSDT/XSDT body is not a whole number of pointers.
    RootPointers {
        table: Table,
        body: usize,
        pointer: usize,
    },
    /// SLIT locality count does not match its matrix size.
    SlitSize { localities: u64, entries: usize },
    /// Two enabled SRAT processor entries give one APIC id different proximity domains.
    SratDuplicateCpu {
        index: usize,
        first: usize,
        apic_id: u32,
        domain: u32,
        first_domain: u32,
    },
    /// SLIT value breaks `slit_valid` (10 on the diagonal, above 10 elsewhere).
    SlitDistance { from: usize, to: usize, value: u8 },
    /// The caller's physical-memory reader failed.
    Read { table: Table, phys: u64, len: usize },
    /// No RSDP signature with a valid checksum was found.
    RsdpNotFound { start: u64, end: u64 },
    /// A required table is not listed in the RSDT/XSDT.
    Missing { table: Table },
}

impl fmt::Display for AcpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use AcpiError as E;
        match self {
            E::Truncated {
                table,
                what,
                need,
                have,
            } => {
                write!(
                    f,
                    "{table}: {what} is truncated: needs {need} bytes but {have} are available"
                )
            }
            E::BadSignature { table, found } => {
                write!(f, "{table}: bad signature \"")?;
                write_sig(f, found)?;
                f.write_str("\", expected \"")?;
                write_sig(f, &table.signature())?;
                f.write_str("\"")
            }
            E::BadLength {
                table,
                length,
                min,
                available,
            } => write!(
                f,
                "{table}: length field {length} is invalid (minimum {min}, {available} bytes available)"
            ),
            E::Checksum { table, sum } => {
                write!(f, "{table}: checksum mismatch (sum {sum:#04x}, expected 0)")
            }
            E::ExtendedChecksum { sum } => {
                write!(
                    f,
                    "RSDP: extended checksum mismatch (sum {sum:#04x}, expected 0)"
                )
            }
            E::EntryTruncated {
                table,
                index,
                kind,
                offset,
                length,
                remain,
            } => write!(
                f,
                "{table}: entry {index} ({kind}) at offset {offset:#x} is truncated: length {length} but {remain} bytes remain"
            ),
            E::EntryTooShort {
                table,
                index,
                kind,
                offset,
                length,
                min,
            } => write!(
                f,
                "{table}: entry {index} ({kind}) at offset {offset:#x} has length {length}, below the minimum {min}"
            ),
            E::RootPointers {
                table,
                body,
                pointer,
            } => write!(
                f,
                "{table}: entry area of {body} bytes is not a multiple of the {pointer}-byte pointer size"
            ),
            E::SlitSize {
                localities,
                entries,
            } => {
                if *localities > super::slit::MAX_LOCALITIES {
                    write!(
                        f,
                        "SLIT: locality count {localities} is above the supported {}",
                        super::slit::MAX_LOCALITIES
                    )
                } else {
                    write!(
                        f,
                        "SLIT: locality count {localities} needs a {localities}x{localities} matrix of {} bytes, but the table has {entries} matrix bytes",
                        localities * localities
                    )
                }
            }
            E::SratDuplicateCpu {
                index,
                first,
                apic_id,
                domain,
                first_domain,
            } => write!(
                f,
                "SRAT: entry {index} (processor affinity) gives APIC id {apic_id} proximity domain {domain}, but entry {first} gave it domain {first_domain}"
            ),
            E::SlitDistance { from, to, value } => write!(
                f,
                "SLIT: distance {from}->{to} is {value}: local must be 10 and remote above 10"
            ),
            E::Read { table, phys, len } => {
                write!(
                    f,
                    "{table}: reading {len} bytes at physical {phys:#x} failed"
                )
            }
            E::RsdpNotFound { start, end } => {
                write!(f, "RSDP: no valid \"RSD PTR \" in {start:#x}-{end:#x}")
            }
            E::Missing { table } => write!(f, "{table}: not listed in the RSDT/XSDT"),
        }
    }
}
