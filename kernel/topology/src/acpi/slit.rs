//! SLIT parsing: the locality count and the `N x N` distance matrix, validated like
//! Linux `slit_valid` (10 on the diagonal, more than 10 elsewhere).

use alloc::vec::Vec;

use super::bytes::u64_at;
use super::error::{AcpiError, Table};
use super::sdt::{SDT_HEADER_LEN, SdtHeader, validate_sdt};

/// Largest locality count accepted (proximity domains beyond are not representable in
/// this kernel's node numbering anyway).
pub const MAX_LOCALITIES: u64 = 1024;

/// A parsed SLIT.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slit {
    /// Table header.
    pub header: SdtHeader,
    /// Number of localities (proximity domains) `N`.
    pub localities: usize,
    /// Row-major `N x N` distances.
    pub entries: Vec<u8>,
}

impl Slit {
    /// Distance from proximity domain `from` to `to`, `None` beyond the matrix.
    pub fn distance(&self, from: u32, to: u32) -> Option<u8> {
        let (f, t) = (from as usize, to as usize);
        if f >= self.localities || t >= self.localities {
            return None;
        }
        self.entries
            .get(f.checked_mul(self.localities)?.checked_add(t)?)
            .copied()
    }
}

/// Parses and validates a SLIT.
pub fn parse_slit(bytes: &[u8]) -> Result<Slit, AcpiError> {
    let table = Table::Slit;
    let (header, t) = validate_sdt(bytes, table)?;
    let n = u64_at(t, SDT_HEADER_LEN).ok_or(AcpiError::Truncated {
        table,
        what: "locality count",
        need: SDT_HEADER_LEN + 8,
        have: t.len(),
    })?;
    let body = t.get(SDT_HEADER_LEN + 8..).unwrap_or(&[]);
    let size = n.checked_mul(n).filter(|_| n <= MAX_LOCALITIES);
    if size != Some(body.len() as u64) {
        return Err(AcpiError::SlitSize {
            localities: n,
            entries: body.len(),
        });
    }
    let localities = n as usize;
    for (i, &v) in body.iter().enumerate() {
        let (from, to) = (i / localities, i % localities);
        let ok = if from == to { v == 10 } else { v > 10 };
        if !ok {
            return Err(AcpiError::SlitDistance { from, to, value: v });
        }
    }
    Ok(Slit {
        header,
        localities,
        entries: body.to_vec(),
    })
}

/// Builds a SLIT from a square matrix (tests and fixtures).
pub fn build_slit(matrix: &[Vec<u8>]) -> Vec<u8> {
    let mut body = Vec::new();
    body.extend_from_slice(&(matrix.len() as u64).to_le_bytes());
    for row in matrix {
        body.extend_from_slice(row);
    }
    super::sdt::build_table(*b"SLIT", 1, &body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::vec;

    #[test]
    fn matrix_and_errors() {
        let s = parse_slit(&build_slit(&[vec![10, 21], vec![21, 10]])).unwrap();
        assert_eq!(s.localities, 2);
        assert_eq!(s.distance(0, 1), Some(21));
        assert_eq!(s.distance(2, 0), None);
        // Size mismatch: 2 localities but 3 bytes.
        let mut body = 2u64.to_le_bytes().to_vec();
        body.extend_from_slice(&[10, 20, 20]);
        let t = crate::acpi::sdt::build_table(*b"SLIT", 1, &body);
        assert_eq!(
            format!("{}", parse_slit(&t).unwrap_err()),
            "SLIT: locality count 2 needs a 2x2 matrix of 4 bytes, but the table has 3 matrix bytes"
        );
        // Huge count must not overflow.
        let mut body = u64::MAX.to_le_bytes().to_vec();
        body.push(10);
        let t = crate::acpi::sdt::build_table(*b"SLIT", 1, &body);
        assert!(matches!(parse_slit(&t), Err(AcpiError::SlitSize { .. })));
        let e = parse_slit(&build_slit(&[vec![10, 9], vec![20, 10]])).unwrap_err();
        assert_eq!(
            e,
            AcpiError::SlitDistance {
                from: 0,
                to: 1,
                value: 9
            }
        );
        let e = parse_slit(&build_slit(&[vec![10, 20], vec![20, 11]])).unwrap_err();
        assert_eq!(
            format!("{e}"),
            "SLIT: distance 1->1 is 11: local must be 10 and remote above 10"
        );
    }
}
