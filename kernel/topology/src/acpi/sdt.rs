//! The common System Description Table header (36 bytes) and its validation:
//! signature, length field, checksum over `length` bytes.

use super::bytes::{array_at, checksum, u8_at, u32_at};
use super::error::{AcpiError, Table};

/// Size of the SDT header.
pub const SDT_HEADER_LEN: usize = 36;

/// Largest table accepted (1 MiB) so that a corrupt length field cannot make the
/// kernel allocate gigabytes.
pub const MAX_TABLE_LEN: usize = 1 << 20;

/// `struct acpi_table_header`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SdtHeader {
    /// Signature, e.g. `*b"APIC"`.
    pub signature: [u8; 4],
    /// Length of the whole table including the header.
    pub length: u32,
    /// Table revision.
    pub revision: u8,
    /// Checksum byte (the whole table sums to 0).
    pub checksum: u8,
    /// OEM id.
    pub oem_id: [u8; 6],
    /// OEM table id.
    pub oem_table_id: [u8; 8],
    /// OEM revision.
    pub oem_revision: u32,
    /// Creator (ASL compiler) id.
    pub creator_id: [u8; 4],
    /// Creator revision.
    pub creator_revision: u32,
}

impl SdtHeader {
    /// Parses the 36 header bytes without validating them.
    pub fn parse(b: &[u8], table: Table) -> Result<SdtHeader, AcpiError> {
        let trunc = || AcpiError::Truncated {
            table,
            what: "header",
            need: SDT_HEADER_LEN,
            have: b.len(),
        };
        Ok(SdtHeader {
            signature: array_at(b, 0).ok_or_else(trunc)?,
            length: u32_at(b, 4).ok_or_else(trunc)?,
            revision: u8_at(b, 8).ok_or_else(trunc)?,
            checksum: u8_at(b, 9).ok_or_else(trunc)?,
            oem_id: array_at(b, 10).ok_or_else(trunc)?,
            oem_table_id: array_at(b, 16).ok_or_else(trunc)?,
            oem_revision: u32_at(b, 24).ok_or_else(trunc)?,
            creator_id: array_at(b, 28).ok_or_else(trunc)?,
            creator_revision: u32_at(b, 32).ok_or_else(trunc)?,
        })
    }
}

/// Validates a whole table of the given kind: header present, signature equal to
/// `table.signature()` (skipped for [`Table::Other`]), `36 <= length <= bytes.len()`,
/// checksum over `length` bytes. Returns the header and the table bytes cut to
/// `length` (trailing bytes beyond the length field are ignored).
pub fn validate_sdt(bytes: &[u8], table: Table) -> Result<(SdtHeader, &[u8]), AcpiError> {
    let h = SdtHeader::parse(bytes, table)?;
    if !matches!(table, Table::Other(_)) && h.signature != table.signature() {
        return Err(AcpiError::BadSignature {
            table,
            found: h.signature,
        });
    }
    let len = h.length as usize;
    if len < SDT_HEADER_LEN || len > bytes.len() || len > MAX_TABLE_LEN {
        return Err(AcpiError::BadLength {
            table,
            length: u64::from(h.length),
            min: SDT_HEADER_LEN,
            available: bytes.len(),
        });
    }
    let t = bytes.get(..len).ok_or(AcpiError::BadLength {
        table,
        length: u64::from(h.length),
        min: SDT_HEADER_LEN,
        available: bytes.len(),
    })?;
    let sum = checksum(t);
    if sum != 0 {
        return Err(AcpiError::Checksum { table, sum });
    }
    Ok((h, t))
}

/// Walks the variable-length `(type, length, ...)` structures of MADT/SRAT from
/// `start` to the end of `t`, calling `f(index, type, offset, entry_bytes)`.
/// An entry needs 2 bytes for type and length, a length of at least 2 and must fit.
/// `kind_of` names a type for error messages.
pub(crate) fn walk_entries<'a>(
    t: &'a [u8],
    start: usize,
    table: Table,
    kind_of: fn(u8) -> &'static str,
    mut f: impl FnMut(usize, u8, usize, &'a [u8]) -> Result<(), AcpiError>,
) -> Result<(), AcpiError> {
    let mut off = start;
    let mut index = 0usize;
    while off < t.len() {
        let remain = t.len() - off;
        let ty = u8_at(t, off).unwrap_or(0);
        let kind = kind_of(ty);
        let Some(len) = u8_at(t, off + 1).map(usize::from) else {
            return Err(AcpiError::EntryTruncated {
                table,
                index,
                kind,
                offset: off,
                length: 2,
                remain,
            });
        };
        if len < 2 {
            return Err(AcpiError::EntryTooShort {
                table,
                index,
                kind,
                offset: off,
                length: len,
                min: 2,
            });
        }
        let Some(entry) = t
            .get(off..off.saturating_add(len))
            .filter(|e| e.len() == len)
        else {
            return Err(AcpiError::EntryTruncated {
                table,
                index,
                kind,
                offset: off,
                length: len,
                remain,
            });
        };
        f(index, ty, off, entry)?;
        off += len;
        index += 1;
    }
    Ok(())
}

/// Checks an entry is at least `min` bytes long.
pub(crate) fn need_len(
    table: Table,
    index: usize,
    kind: &'static str,
    offset: usize,
    entry: &[u8],
    min: usize,
) -> Result<(), AcpiError> {
    if entry.len() < min {
        return Err(AcpiError::EntryTooShort {
            table,
            index,
            kind,
            offset,
            length: entry.len(),
            min,
        });
    }
    Ok(())
}

/// Builds a valid table (header + body, checksum fixed) — used by tests and by
/// fixtures built by hand.
pub fn build_table(signature: [u8; 4], revision: u8, body: &[u8]) -> alloc::vec::Vec<u8> {
    let mut t = alloc::vec::Vec::with_capacity(SDT_HEADER_LEN + body.len());
    t.extend_from_slice(&signature);
    let len = u32::try_from(SDT_HEADER_LEN + body.len()).unwrap_or(u32::MAX);
    t.extend_from_slice(&len.to_le_bytes());
    t.push(revision);
    t.push(0);
    t.extend_from_slice(b"SCHEDL");
    t.extend_from_slice(b"SCHEDLAB");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(b"SLAB");
    t.extend_from_slice(&1u32.to_le_bytes());
    t.extend_from_slice(body);
    fix_checksum(&mut t, 9);
    t
}

/// Sets the byte at `at` so that the whole slice sums to 0.
pub fn fix_checksum(t: &mut [u8], at: usize) {
    if let Some(c) = t.get_mut(at) {
        *c = 0;
    }
    let sum = checksum(t);
    if let Some(c) = t.get_mut(at) {
        *c = 0u8.wrapping_sub(sum);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;

    #[test]
    fn header_checks() {
        let t = build_table(*b"SLIT", 1, &[1, 2, 3]);
        let (h, body) = validate_sdt(&t, Table::Slit).unwrap();
        assert_eq!(h.length, 39);
        assert_eq!(body.len(), 39);
        let e = validate_sdt(&t, Table::Madt).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "MADT: bad signature \"SLIT\", expected \"APIC\""
        );
        let mut bad = t.clone();
        bad[38] = bad[38].wrapping_add(0x3c);
        assert_eq!(
            format!("{}", validate_sdt(&bad, Table::Slit).unwrap_err()),
            "SLIT: checksum mismatch (sum 0x3c, expected 0)"
        );
        let e = validate_sdt(&t[..30], Table::Slit).unwrap_err();
        assert!(matches!(
            e,
            AcpiError::Truncated {
                need: 36,
                have: 30,
                ..
            }
        ));
        let e = validate_sdt(&t[..38], Table::Slit).unwrap_err();
        assert!(
            matches!(
                e,
                AcpiError::BadLength {
                    length: 39,
                    available: 38,
                    ..
                }
            ),
            "{e:?}"
        );
        // Trailing bytes past the length field are ignored.
        let mut long = t.clone();
        long.extend_from_slice(&[0xAA; 5]);
        assert_eq!(validate_sdt(&long, Table::Slit).unwrap().1.len(), 39);
    }
}
