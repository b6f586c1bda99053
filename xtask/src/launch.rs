//! One boot of the kernel: image from a boot configuration, QEMU, records.
//! Shared by `cargo xtask run` and the integration tests in `tests/`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use bootcfg::BootConfig;

use crate::build;
use crate::qemu::{self, QemuConfig};
use crate::runner::{self, RunResult};

/// Environment variable naming the kernel ELF (set by `cargo xtask test`).
pub const ENV_KERNEL: &str = "SCHEDLAB_KERNEL";
/// Environment variable naming the image builder (set by `cargo xtask test`).
pub const ENV_BOOT_TOOL: &str = "SCHEDLAB_BOOT_TOOL";

/// The two build products every boot needs.
#[derive(Clone, Debug)]
pub struct Launcher {
    pub kernel: PathBuf,
    pub boot_tool: PathBuf,
}

impl Launcher {
    /// Builds the kernel and the image builder.
    pub fn build(release: bool, max_log_level: Option<&str>) -> Result<Launcher> {
        Ok(Launcher {
            kernel: build::kernel(release, max_log_level)?,
            boot_tool: build::boot_tool()?,
        })
    }

    /// Finds the products named by `cargo xtask test` in the environment.
    pub fn from_env() -> Result<Launcher> {
        let get = |k: &str| -> Result<PathBuf> {
            let p = PathBuf::from(std::env::var(k).with_context(|| {
                format!("{k} is not set: run the QEMU tests through `cargo xtask test`")
            })?);
            anyhow::ensure!(p.is_file(), "{k}={} does not exist", p.display());
            Ok(p)
        };
        Ok(Launcher {
            kernel: get(ENV_KERNEL)?,
            boot_tool: get(ENV_BOOT_TOOL)?,
        })
    }

    /// Builds an image for `config` and boots it in QEMU as `qemu` describes.
    pub fn boot(
        &self,
        config: &BootConfig,
        qemu: &QemuConfig,
        timeout: Duration,
        echo: bool,
    ) -> Result<RunResult> {
        self.boot_logged(config, qemu, timeout, echo, None)
    }

    /// [`Launcher::boot`], copying the raw console to `console_log` (created
    /// before the build of the image, so a bad path fails before QEMU starts).
    pub fn boot_logged(
        &self,
        config: &BootConfig,
        qemu: &QemuConfig,
        timeout: Duration,
        echo: bool,
        console_log: Option<&Path>,
    ) -> Result<RunResult> {
        let console = console_log
            .map(|p| {
                std::fs::File::create(p)
                    .with_context(|| format!("--console-log: creating {}", p.display()))
            })
            .transpose()?;
        // The kernel aligns its bring-up to the virtual clock under -icount.
        let config = BootConfig {
            icount: qemu.icount_shift.is_some(),
            ..config.clone()
        };
        let image = build::image(&self.boot_tool, &self.kernel, &config, qemu.firmware)?;
        let result = qemu.command(&image).and_then(|cmd| {
            if echo {
                eprintln!("$ {}", qemu::display(&cmd));
            }
            runner::run_logged(cmd, timeout, echo, console)
        });
        // The image directory is per run; remove it whatever happened
        // (unless --keep).
        if let Some(dir) = image.parent() {
            crate::cleanup::finish_dir(dir);
        }
        result
    }
}
