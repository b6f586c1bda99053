//! The run configuration handed from `cargo xtask` to the kernel.
//!
//! xtask writes it as a small text file that the bootloader loads as the
//! ramdisk; the kernel parses it at boot. Keeping both sides in this one pure
//! crate means the format, the key names and the experiment catalogue cannot
//! drift apart, and the parser is tested on the host.
//!
//! Format: one `key=value` per line, `#` starts a comment, blank lines ignored.
//! Every key is optional; unknown keys and bad values are errors naming the line.

#![cfg_attr(not(test), no_std)]
#![forbid(unsafe_code)]

extern crate alloc;

use alloc::string::{String, ToString};
use core::fmt;

mod experiments;
pub use experiments::{EXPERIMENTS, ExperimentInfo, find_experiment};

/// Log verbosity, as in the `log` crate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogLevel {
    Error,
    Warn,
    Info,
    Debug,
    Trace,
}

impl LogLevel {
    /// All levels, least verbose first.
    pub const ALL: [LogLevel; 5] = [
        LogLevel::Error,
        LogLevel::Warn,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// The lower-case name used in the file and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    /// Parses a level name.
    pub fn parse(s: &str) -> Option<LogLevel> {
        Self::ALL.into_iter().find(|l| l.name() == s)
    }
}

/// A parsed boot configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BootConfig {
    /// Name of the experiment to run (see [`EXPERIMENTS`]).
    pub experiment: String,
    /// Console log level.
    pub log_level: LogLevel,
    /// Free-form label copied into the boot record (e.g. "baseline").
    pub label: String,
    /// Scheduler tick rate per CPU (Linux's CONFIG_HZ).
    pub hz: u32,
    /// Pick policy of the fair class: "cfs" or "eevdf".
    pub pick: String,
    /// Scheduler feature switches, e.g. "WA_IDLE,NO_SIS_UTIL" (validated by
    /// the `sched` crate; empty = Linux defaults).
    pub features: String,
    /// Experiment arguments, `key:value` pairs separated by commas
    /// (e.g. "threads:512,duration_ms:2000"); each experiment checks its keys.
    pub args: String,
    /// How idle CPUs wait: "hlt" or "mwait".
    pub idle: String,
    /// Scheduling policy (`sched::policies::POLICIES`), default "fair".
    pub policy: String,
    /// Scheduler trace: events kept per CPU (0 = no trace).
    pub trace: u32,
    /// Perturbation seed (`--seed`): each thread spins a seed-derived
    /// 0..=`SEED_JITTER_MAX_NS` before its body. `None` = no perturbation.
    pub seed: Option<u64>,
    /// Running under QEMU `-icount` (virtual clock): the kernel aligns its
    /// bring-up to a whole second of that clock so the firmware's
    /// host-dependent disk time cannot shift later timer phases.
    pub icount: bool,
}

/// Stack of every kernel thread (the kernel's `task::thread::STACK_BYTES`),
/// here so that the host's memory check and the kernel agree.
pub const THREAD_STACK_BYTES: usize = 64 * 1024;
/// Heap bytes of one scheduler trace event (the kernel asserts its event fits).
pub const TRACE_EVENT_BYTES: usize = 40;
/// Stack of each application processor's bring-up/idle context (kernel `arch::smp`).
pub const AP_STACK_BYTES: usize = 256 * 1024;
/// Part of the largest RAM region the kernel keeps for frames instead of its heap.
pub const FRAME_RESERVE_BYTES: u64 = 16 << 20;

/// Longest per-thread start jitter a seed can ask for (ns).
pub const SEED_JITTER_MAX_NS: u64 = 20_000;

/// Most trace events kept per CPU.
pub const TRACE_MAX: u32 = 1 << 22;

/// The experiment run when nothing is configured.
pub const DEFAULT_EXPERIMENT: &str = "tour";

/// The hackbench the `tour` experiment runs after the machine check: small
/// enough for a first run, busy enough to wake, place and migrate threads.
pub const TOUR_HACKBENCH_ARGS: &str = "groups:2,fds:4,loops:50";

impl Default for BootConfig {
    fn default() -> Self {
        BootConfig {
            experiment: DEFAULT_EXPERIMENT.to_string(),
            log_level: LogLevel::Info,
            label: String::new(),
            hz: DEFAULT_HZ,
            pick: String::from("cfs"),
            features: String::new(),
            args: String::new(),
            idle: String::from("hlt"),
            policy: String::from("fair"),
            trace: 0,
            seed: None,
            icount: false,
        }
    }
}

/// Default tick rate (as Linux distributions commonly build with CONFIG_HZ=250).
pub const DEFAULT_HZ: u32 = 250;
/// Accepted tick rates.
pub const HZ_RANGE: core::ops::RangeInclusive<u32> = 10..=10_000;

/// A configuration error, with the 1-based line it occurred on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// The file is not UTF-8.
    NotUtf8,
    /// A line without `=`.
    MissingEquals { line: usize },
    /// A key this kernel does not know.
    UnknownKey { line: usize, key: String },
    /// A key given twice.
    DuplicateKey { line: usize, key: String },
    /// An experiment name that is not in the catalogue.
    UnknownExperiment { line: usize, name: String },
    /// A log level that is not one of error/warn/info/debug/trace.
    BadLogLevel { line: usize, value: String },
    /// A label with characters outside `[A-Za-z0-9._-]` or longer than 64 bytes.
    BadLabel { line: usize, value: String },
    /// A tick rate that is not an integer in [`HZ_RANGE`].
    BadHz { line: usize, value: String },
    /// A pick policy other than cfs / eevdf.
    BadPick { line: usize, value: String },
    /// A feature list with characters outside `[A-Z0-9_,]`.
    BadFeatures { line: usize, value: String },
    /// Experiment arguments that are not `key:value` pairs.
    BadArgs { line: usize, value: String },
    /// An idle method other than hlt / mwait.
    BadIdle { line: usize, value: String },
    /// A policy name with characters outside `[a-z0-9_]`.
    BadPolicy { line: usize, value: String },
    /// A trace size that is not an integer up to [`TRACE_MAX`].
    BadTrace { line: usize, value: String },
    /// A seed that is not an unsigned 64-bit integer.
    BadSeed { line: usize, value: String },
    /// An icount flag other than 0 / 1.
    BadIcount { line: usize, value: String },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::NotUtf8 => write!(f, "boot config is not valid UTF-8"),
            ConfigError::MissingEquals { line } => {
                write!(f, "boot config line {line}: expected key=value")
            }
            ConfigError::UnknownKey { line, key } => write!(
                f,
                "boot config line {line}: unknown key '{key}' (known: experiment, log, label, hz, pick, features, args, idle, policy, trace, seed, icount)"
            ),
            ConfigError::DuplicateKey { line, key } => {
                write!(f, "boot config line {line}: key '{key}' given twice")
            }
            ConfigError::UnknownExperiment { line, name } => {
                write!(
                    f,
                    "boot config line {line}: unknown experiment '{name}' (known: "
                )?;
                for (i, e) in EXPERIMENTS.iter().enumerate() {
                    let sep = if i == 0 { "" } else { ", " };
                    write!(f, "{sep}{}", e.name)?;
                }
                write!(f, ")")
            }
            ConfigError::BadLogLevel { line, value } => write!(
                f,
                "boot config line {line}: bad log level '{value}' (error, warn, info, debug, trace)"
            ),
            ConfigError::BadLabel { line, value } => write!(
                f,
                "boot config line {line}: bad label '{value}' (up to 64 of A-Z a-z 0-9 . _ -)"
            ),
            ConfigError::BadTrace { line, value } => write!(
                f,
                "boot config line {line}: bad trace size '{value}' (events per CPU, 0 to {TRACE_MAX})"
            ),
            ConfigError::BadSeed { line, value } => write!(
                f,
                "boot config line {line}: bad seed '{value}' (an integer from 0 to {})",
                u64::MAX
            ),
            ConfigError::BadIcount { line, value } => {
                write!(
                    f,
                    "boot config line {line}: bad icount flag '{value}' (0 or 1)"
                )
            }
            ConfigError::BadPolicy { line, value } => {
                write!(f, "boot config line {line}: bad policy name '{value}'")
            }
            ConfigError::BadIdle { line, value } => {
                write!(
                    f,
                    "boot config line {line}: bad idle method '{value}' (hlt or mwait)"
                )
            }
            ConfigError::BadArgs { line, value } => write!(
                f,
                "boot config line {line}: bad experiment arguments '{value}' (key:value pairs separated by commas)"
            ),
            ConfigError::BadPick { line, value } => {
                write!(
                    f,
                    "boot config line {line}: bad pick policy '{value}' (cfs or eevdf)"
                )
            }
            ConfigError::BadFeatures { line, value } => write!(
                f,
                "boot config line {line}: bad feature list '{value}' (comma-separated NAME or NO_NAME)"
            ),
            ConfigError::BadHz { line, value } => write!(
                f,
                "boot config line {line}: bad tick rate '{value}' (an integer from {} to {})",
                HZ_RANGE.start(),
                HZ_RANGE.end()
            ),
        }
    }
}

fn valid_label(s: &str) -> bool {
    s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Splits experiment arguments into `(key, value)` pairs; `None` if malformed.
/// Keys and values use `[A-Za-z0-9_.-]`.
pub fn parse_args(s: &str) -> Option<alloc::vec::Vec<(&str, &str)>> {
    let ok = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
    };
    if s.is_empty() {
        return Some(alloc::vec::Vec::new());
    }
    s.split(',')
        .map(|kv| kv.split_once(':').filter(|(k, v)| ok(k) && ok(v)))
        .collect()
}

impl BootConfig {
    /// Parses the configuration file contents.
    pub fn parse(bytes: &[u8]) -> Result<BootConfig, ConfigError> {
        let text = core::str::from_utf8(bytes).map_err(|_| ConfigError::NotUtf8)?;
        let mut cfg = BootConfig::default();
        let mut seen = [false; 12];
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let content = raw.split('#').next().unwrap_or("").trim();
            if content.is_empty() {
                continue;
            }
            let (key, value) = content
                .split_once('=')
                .ok_or(ConfigError::MissingEquals { line })?;
            let (key, value) = (key.trim(), value.trim());
            let slot = match key {
                "experiment" => 0,
                "log" => 1,
                "label" => 2,
                "hz" => 3,
                "pick" => 4,
                "features" => 5,
                "args" => 6,
                "idle" => 7,
                "policy" => 8,
                "trace" => 9,
                "seed" => 10,
                "icount" => 11,
                _ => {
                    return Err(ConfigError::UnknownKey {
                        line,
                        key: key.to_string(),
                    });
                }
            };
            if core::mem::replace(&mut seen[slot], true) {
                return Err(ConfigError::DuplicateKey {
                    line,
                    key: key.to_string(),
                });
            }
            match slot {
                0 => {
                    if find_experiment(value).is_none() {
                        return Err(ConfigError::UnknownExperiment {
                            line,
                            name: value.to_string(),
                        });
                    }
                    cfg.experiment = value.to_string();
                }
                1 => {
                    cfg.log_level = LogLevel::parse(value).ok_or(ConfigError::BadLogLevel {
                        line,
                        value: value.to_string(),
                    })?;
                }
                10 => {
                    cfg.seed = Some(value.parse::<u64>().map_err(|_| ConfigError::BadSeed {
                        line,
                        value: value.to_string(),
                    })?);
                }
                11 => {
                    cfg.icount = match value {
                        "0" => false,
                        "1" => true,
                        _ => {
                            return Err(ConfigError::BadIcount {
                                line,
                                value: value.to_string(),
                            });
                        }
                    };
                }
                9 => {
                    cfg.trace = value
                        .parse::<u32>()
                        .ok()
                        .filter(|n| *n <= TRACE_MAX)
                        .ok_or(ConfigError::BadTrace {
                            line,
                            value: value.to_string(),
                        })?;
                }
                8 => {
                    let ok = !value.is_empty()
                        && value
                            .bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
                    if !ok {
                        return Err(ConfigError::BadPolicy {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.policy = value.to_string();
                }
                7 => {
                    if value != "hlt" && value != "mwait" {
                        return Err(ConfigError::BadIdle {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.idle = value.to_string();
                }
                6 => {
                    if parse_args(value).is_none() {
                        return Err(ConfigError::BadArgs {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.args = value.to_string();
                }
                4 => {
                    if value != "cfs" && value != "eevdf" {
                        return Err(ConfigError::BadPick {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.pick = value.to_string();
                }
                5 => {
                    let ok = value.bytes().all(|b| {
                        b.is_ascii_uppercase() || b.is_ascii_digit() || b"_,".contains(&b)
                    });
                    if !ok {
                        return Err(ConfigError::BadFeatures {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.features = value.to_string();
                }
                3 => {
                    cfg.hz = value
                        .parse()
                        .ok()
                        .filter(|hz| HZ_RANGE.contains(hz))
                        .ok_or(ConfigError::BadHz {
                            line,
                            value: value.to_string(),
                        })?;
                }
                _ => {
                    if !valid_label(value) {
                        return Err(ConfigError::BadLabel {
                            line,
                            value: value.to_string(),
                        });
                    }
                    cfg.label = value.to_string();
                }
            }
        }
        Ok(cfg)
    }

    /// Serialises the configuration in the format [`BootConfig::parse`] reads.
    pub fn to_text(&self) -> String {
        let mut s = String::from("# schedlab boot configuration (written by cargo xtask)\n");
        s.push_str("experiment=");
        s.push_str(&self.experiment);
        s.push_str("\nlog=");
        s.push_str(self.log_level.name());
        s.push_str("\nhz=");
        s.push_str(&alloc::format!("{}", self.hz));
        s.push_str("\npolicy=");
        s.push_str(&self.policy);
        s.push_str("\nidle=");
        s.push_str(&self.idle);
        s.push_str("\npick=");
        s.push_str(&self.pick);
        s.push('\n');
        if !self.args.is_empty() {
            s.push_str("args=");
            s.push_str(&self.args);
            s.push('\n');
        }
        if !self.features.is_empty() {
            s.push_str("features=");
            s.push_str(&self.features);
            s.push('\n');
        }
        if !self.label.is_empty() {
            s.push_str("label=");
            s.push_str(&self.label);
            s.push('\n');
        }
        if self.trace > 0 {
            s.push_str(&alloc::format!("trace={}\n", self.trace));
        }
        if let Some(seed) = self.seed {
            s.push_str(&alloc::format!("seed={seed}\n"));
        }
        if self.icount {
            s.push_str("icount=1\n");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let cfg = BootConfig {
            experiment: "test-panic".into(),
            log_level: LogLevel::Debug,
            label: "variant-1".into(),
            hz: 1000,
            pick: "eevdf".into(),
            features: "WA_IDLE,NO_SIS_UTIL".into(),
            args: "threads:64,duration_ms:500".into(),
            idle: "mwait".into(),
            policy: "prev_idle".into(),
            trace: 4096,
            seed: Some(u64::MAX),
            icount: true,
        };
        assert_eq!(BootConfig::parse(cfg.to_text().as_bytes()), Ok(cfg));
        assert_eq!(
            BootConfig::parse(b"seed=-1"),
            Err(ConfigError::BadSeed {
                line: 1,
                value: "-1".into()
            })
        );
        assert_eq!(
            BootConfig::parse(b"icount=yes"),
            Err(ConfigError::BadIcount {
                line: 1,
                value: "yes".into()
            })
        );
        assert_eq!(BootConfig::parse(b"seed=0").unwrap().seed, Some(0));
        assert_eq!(
            BootConfig::parse(b"trace=lots"),
            Err(ConfigError::BadTrace {
                line: 1,
                value: "lots".into()
            })
        );
    }

    #[test]
    fn empty_is_default() {
        assert_eq!(
            BootConfig::parse(b"\n# nothing\n"),
            Ok(BootConfig::default())
        );
    }

    #[test]
    fn errors_name_the_line() {
        let e = BootConfig::parse(b"log=info\nfoo=1\n").unwrap_err();
        assert_eq!(
            e,
            ConfigError::UnknownKey {
                line: 2,
                key: "foo".into()
            }
        );
        assert!(e.to_string().contains("line 2"));
        let e = BootConfig::parse(b"experiment=nope").unwrap_err();
        assert!(e.to_string().contains("unknown experiment 'nope'"));
        assert!(
            e.to_string().contains("boot"),
            "lists known experiments: {e}"
        );
        assert_eq!(
            BootConfig::parse(b"log=loud"),
            Err(ConfigError::BadLogLevel {
                line: 1,
                value: "loud".into()
            })
        );
        assert_eq!(
            BootConfig::parse(b"log"),
            Err(ConfigError::MissingEquals { line: 1 })
        );
        assert_eq!(
            BootConfig::parse(b"log=info\nlog=warn"),
            Err(ConfigError::DuplicateKey {
                line: 2,
                key: "log".into()
            })
        );
        assert_eq!(BootConfig::parse(&[0xff, 0xfe]), Err(ConfigError::NotUtf8));
        assert_eq!(
            BootConfig::parse(b"hz=5"),
            Err(ConfigError::BadHz {
                line: 1,
                value: "5".into()
            })
        );
        assert!(BootConfig::parse(b"hz=abc").is_err());
        assert!(matches!(
            BootConfig::parse(b"args=threads"),
            Err(ConfigError::BadArgs { .. })
        ));
        assert!(matches!(
            BootConfig::parse(b"args=a:1,,b:2"),
            Err(ConfigError::BadArgs { .. })
        ));
        assert_eq!(
            parse_args("threads:64,mode:pipe").unwrap(),
            [("threads", "64"), ("mode", "pipe")]
        );
        assert!(matches!(
            BootConfig::parse(b"idle=poll"),
            Err(ConfigError::BadIdle { .. })
        ));
        assert!(matches!(
            BootConfig::parse(b"pick=rr"),
            Err(ConfigError::BadPick { line: 1, .. })
        ));
        assert!(matches!(
            BootConfig::parse(b"features=wa idle"),
            Err(ConfigError::BadFeatures { .. })
        ));
        assert!(matches!(
            BootConfig::parse(b"label=a b"),
            Err(ConfigError::BadLabel { line: 1, .. })
        ));
    }

    #[test]
    fn every_experiment_parses() {
        for e in EXPERIMENTS {
            let text = alloc::format!("experiment={}", e.name);
            assert_eq!(
                BootConfig::parse(text.as_bytes()).unwrap().experiment,
                e.name
            );
        }
        assert!(find_experiment(DEFAULT_EXPERIMENT).is_some());
    }
}
