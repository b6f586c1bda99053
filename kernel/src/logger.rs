//! The `log` facade's backend: one line per message on the serial console,
//! `[cpuN LEVEL target] message`. Needs no heap, so it works from the first
//! instruction after `serial::init` until the very end.

use log::{LevelFilter, Log, Metadata, Record};

use crate::arch::{percpu, serial};

struct SerialLogger;

static LOGGER: SerialLogger = SerialLogger;

impl Log for SerialLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let cpu = percpu::cpu_index();
        let target = record.target().trim_start_matches("schedlab_kernel::");
        serial::with_port(|w| {
            writeln!(
                w,
                "[cpu{cpu} {:<5} {target}] {}",
                record.level(),
                record.args()
            )
        });
    }

    fn flush(&self) {}
}

/// Installs the logger with an initial level (changed later by the boot config).
pub fn init(level: LevelFilter) {
    // Only fails if a logger is already set, which would be a start-up bug.
    log::set_logger(&LOGGER).expect("logger installed twice");
    log::set_max_level(level);
}

/// Changes the console log level.
pub fn set_level(level: bootcfg::LogLevel) {
    log::set_max_level(match level {
        bootcfg::LogLevel::Error => LevelFilter::Error,
        bootcfg::LogLevel::Warn => LevelFilter::Warn,
        bootcfg::LogLevel::Info => LevelFilter::Info,
        bootcfg::LogLevel::Debug => LevelFilter::Debug,
        bootcfg::LogLevel::Trace => LevelFilter::Trace,
    });
}
