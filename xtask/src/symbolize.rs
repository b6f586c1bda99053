//! Maps a faulting RIP from a `fault` record back to a function and source
//! line, using `llvm-addr2line` from rustup's `llvm-tools` component on the
//! kernel ELF. The kernel is position independent: the bootloader loads it at
//! `kernel_image_offset` (from the `boot` record), which is subtracted first.

use std::path::{Path, PathBuf};
use std::process::Command;

fn addr2line() -> Option<PathBuf> {
    let out = Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .ok()?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    let tool = sysroot.join("lib/rustlib/x86_64-unknown-linux-gnu/bin/llvm-addr2line");
    tool.is_file().then_some(tool)
}

/// `function at file:line` for `rip`, or `None` when it cannot be resolved.
pub fn locate(elf: &Path, rip: u64, image_offset: u64) -> Option<String> {
    let addr = rip.checked_sub(image_offset)?;
    let out = Command::new(addr2line()?)
        .args(["--functions", "--demangle", "--inlining", "--exe"])
        .arg(elf)
        .arg(format!("{addr:#x}"))
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let func = lines.next()?.trim();
    let place = lines.next()?.trim();
    if func == "??" && place.starts_with("??") {
        return None;
    }
    Some(format!("{func} at {place}"))
}
