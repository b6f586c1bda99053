//! Bounds-checked little-endian field readers: every read returns `None` instead of
//! panicking when the field would run past the slice or an offset would overflow.

/// `len` bytes at `off`, or `None`.
pub(crate) fn slice(b: &[u8], off: usize, len: usize) -> Option<&[u8]> {
    b.get(off..off.checked_add(len)?)
}

/// Byte at `off`.
pub(crate) fn u8_at(b: &[u8], off: usize) -> Option<u8> {
    b.get(off).copied()
}

/// Little-endian `u16` at `off`.
pub(crate) fn u16_at(b: &[u8], off: usize) -> Option<u16> {
    slice(b, off, 2)?.try_into().ok().map(u16::from_le_bytes)
}

/// Little-endian `u32` at `off`.
pub(crate) fn u32_at(b: &[u8], off: usize) -> Option<u32> {
    slice(b, off, 4)?.try_into().ok().map(u32::from_le_bytes)
}

/// Little-endian `u64` at `off`.
pub(crate) fn u64_at(b: &[u8], off: usize) -> Option<u64> {
    slice(b, off, 8)?.try_into().ok().map(u64::from_le_bytes)
}

/// `N` bytes at `off` as an array.
pub(crate) fn array_at<const N: usize>(b: &[u8], off: usize) -> Option<[u8; N]> {
    slice(b, off, N)?.try_into().ok()
}

/// Sum of all bytes modulo 256 (ACPI checksum: a valid table sums to 0).
pub(crate) fn checksum(b: &[u8]) -> u8 {
    b.iter().fold(0u8, |a, &x| a.wrapping_add(x))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        let b = [1u8, 2, 3, 4, 5, 6, 7, 8, 9];
        assert_eq!(u16_at(&b, 0), Some(0x0201));
        assert_eq!(u32_at(&b, 5), Some(0x0908_0706));
        assert_eq!(u32_at(&b, 6), None);
        assert_eq!(u64_at(&b, 1), Some(0x0908_0706_0504_0302));
        assert_eq!(u64_at(&b, usize::MAX), None);
        assert_eq!(slice(&b, usize::MAX - 1, 4), None);
        assert_eq!(array_at::<2>(&b, 7), Some([8, 9]));
        assert_eq!(checksum(&[0xff, 0x01, 0x10]), 0x10);
    }
}
