//! Maps a faulting RIP from a `fault` record back to a function and source
//! line, reading the kernel ELF's DWARF with the `addr2line` crate. The kernel
//! is position independent: the bootloader loads it at `kernel_image_offset`
//! (from the `boot` record), which is subtracted first.

use std::path::Path;

/// `function at file:line` for `rip` (innermost inlined frame first, callers
/// after ` <- `), or `None` when it cannot be resolved.
pub fn locate(elf: &Path, rip: u64, image_offset: u64) -> Option<String> {
    let addr = rip.checked_sub(image_offset)?;
    let loader = addr2line::Loader::new(elf).ok()?;
    let mut frames = loader.find_frames(addr).ok()?;
    let mut parts = Vec::new();
    while let Ok(Some(frame)) = frames.next() {
        let func = frame
            .function
            .as_ref()
            .and_then(|f| f.demangle().ok().map(|s| s.into_owned()))
            .unwrap_or_else(|| "??".into());
        let place = frame.location.as_ref().map_or("??".to_string(), |l| {
            format!("{}:{}", l.file.unwrap_or("??"), l.line.unwrap_or(0))
        });
        parts.push(format!("{func} at {place}"));
    }
    (!parts.is_empty()).then(|| parts.join(" <- "))
}
