//! schedlab: a bare-metal x86_64 kernel for scheduler-placement research.
//!
//! Boot flow (boot CPU): serial + logger -> heap -> GDT/TSS/IDT -> per-CPU
//! block -> x87/SSE enabled (`arch/fpu.rs`) -> boot configuration (from the
//! ramdisk) -> ACPI -> banner and `boot` record -> the configured experiment
//! -> `exit` record -> QEMU exit status.
//! See `docs/boot.md` for the whole picture and `docs/results.md` for records.

#![no_std]
#![no_main]
// `unsafe` lives in `arch/` (hardware) and `mm/` (memory) only, behind safe
// wrappers; the one exception is the context switch call in
// `task::sched::switch_to`, whose safety rests on thread lifetimes that only
// the scheduler glue knows (docs/kernel.md, "Structure").
#![deny(unsafe_code)]

extern crate alloc;

mod acpi;
#[allow(unsafe_code)]
mod arch;
mod experiments;
mod fault;
mod irq;
mod logger;
mod machine;
mod machine_report;
#[allow(unsafe_code)]
mod mm;
mod record;
mod sync;
mod task;
mod trace;
mod watchdog;

use bootcfg::BootConfig;
use bootloader_api::config::Mapping;
use bootloader_api::{BootInfo, BootloaderConfig, entry_point};
use log::LevelFilter;

use arch::qemu::{self, ExitCode};
use record::{Emit, Record};

/// Asks the bootloader to map all physical memory and give us a big stack.
pub static BOOTLOADER_CONFIG: BootloaderConfig = {
    let mut config = BootloaderConfig::new_default();
    config.mappings.physical_memory = Some(Mapping::Dynamic);
    config.kernel_stack_size = 512 * 1024;
    config
};

entry_point!(kernel_main, config = &BOOTLOADER_CONFIG);

fn kernel_main(boot_info: &'static mut BootInfo) -> ! {
    arch::serial::init();
    logger::init(LevelFilter::Info);
    let mem = mm::init(boot_info);
    arch::gdt::init_this_cpu();
    irq::init();
    arch::idt::load();
    arch::percpu::install(0, arch::cpu::apic_id());
    arch::pic::disable();
    if let Err(msg) = arch::fpu::init_this_cpu() {
        fail("cpu", &msg);
    }

    let cfg = match load_config(boot_info) {
        Ok(cfg) => cfg,
        Err(msg) => {
            log::error!("{msg}");
            Record::new("error")
                .str("kind", "config")
                .str("message", &msg)
                .emit();
            end(ExitCode::Failure);
        }
    };
    logger::set_level(cfg.log_level);

    let acpi = match acpi::probe(
        boot_info.rsdp_addr.into_option(),
        mem.phys_offset,
        mem.phys_limit,
    ) {
        Ok(a) => a,
        Err(msg) => fail("acpi", &msg),
    };
    print_banner(&mem, &acpi, &cfg, boot_info);
    // Parsed before the machine comes up: the domains need the switch that
    // selects their construction rules (IMB_PCT_117); the scheduler gets
    // the same set (start_scheduler).
    let features = match sched::Features::parse(&cfg.features) {
        Ok(f) => f,
        Err(e) => fail(
            "config",
            &alloc::format!("features '{}': {e}", cfg.features),
        ),
    };
    let machine = match machine::bring_up(
        &acpi.firmware,
        &acpi.clock,
        mem.phys_offset,
        cfg.hz,
        cfg.icount,
        &sched::domain_config(features),
    ) {
        Ok(m) => m,
        Err(msg) => fail("topology", &msg),
    };
    let t0 = arch::time::now_ns();
    machine_report::print_console(&machine);
    let t1 = arch::time::now_ns();
    machine_report::emit_smp(&machine);
    let t2 = arch::time::now_ns();
    let topology_bytes = machine_report::emit_topology(&machine);
    let t3 = arch::time::now_ns();
    log::info!(
        "report printed in {} ms: console listing {} ms, smp record {} ms, topology record {} ms ({} bytes) (TSC time)",
        (t3 - t0) / 1_000_000,
        (t1 - t0) / 1_000_000,
        (t2 - t1) / 1_000_000,
        (t3 - t2) / 1_000_000,
        topology_bytes,
    );
    log::info!(
        "{} of {} CPUs online {} ms after reset; TSC {} MHz ({}); tick {} Hz ({})",
        1 + machine.aps.iter().filter(|a| a.online).count(),
        machine.topology.nr_cpus(),
        machine.reset_to_online_ns / 1_000_000,
        machine.tsc.hz / 1_000_000,
        machine.tsc.source.name(),
        machine.hz,
        if machine.timer.tsc_deadline {
            "TSC-deadline"
        } else {
            "periodic"
        },
    );
    start_scheduler(&machine, &cfg, features);
    let (experiment, args) = (cfg.experiment.clone(), cfg.args.clone());
    let machine: &'static machine::Machine =
        alloc::boxed::Box::leak(alloc::boxed::Box::new(machine));
    task::spawn(
        task::SpawnOptions {
            name: "main".into(),
            // It runs the workload's whole async state machine: in a debug
            // kernel, netperf TCP_STREAM on 2 CPUs peaked at 64,728 of the
            // default 64 KiB stack's 65,504 usable bytes (1 December), so
            // a slightly deeper scheduler path overflowed it now and then.
            stack_bytes: 2 * task::thread::STACK_BYTES,
            ..Default::default()
        },
        move || end(experiments::run(&experiment, &args, machine)),
    );
    task::sched::idle_loop()
}

/// Creates the scheduler core for this machine with the run's policy and
/// switches, and lets every CPU enter the idle loop.
fn start_scheduler(m: &machine::Machine, cfg: &BootConfig, features: sched::Features) {
    use sched::SchedPolicy;
    let nr = m.topology.nr_cpus();
    let pick = match sched::PickPolicy::parse(&cfg.pick) {
        Ok(p) => p,
        Err(e) => fail("config", &e),
    };
    let mut sc = sched::SchedConfig::new(nr, pick);
    sc.set_features(features);
    sc.rng_seed = cfg.seed.unwrap_or(0);
    sc.tunables.tick_ns = 1_000_000_000 / cfg.hz as u64;
    let policy = match sched::policies::by_name(&cfg.policy) {
        Ok(p) => p,
        Err(e) => fail("config", &e),
    };
    let mwait = cfg.idle == "mwait";
    if mwait && !arch::cpu::has_monitor_mwait() {
        fail(
            "config",
            "idle=mwait: this CPU has no MONITOR/MWAIT (CPUID.1:ECX[3])",
        );
    }
    workloads::json::sched_config_record(policy.name(), &sc, &cfg.idle)
        .raw(
            "seed",
            &cfg.seed
                .map_or_else(|| "null".into(), |s| alloc::format!("{s}")),
        )
        .u64(
            "seed_jitter_max_ns",
            if cfg.seed.is_some() {
                bootcfg::SEED_JITTER_MAX_NS
            } else {
                0
            },
        )
        .emit();
    task::jitter::set_seed(cfg.seed);
    let topo = sched::SchedTopo::new(&m.topology, m.domains.clone());
    task::sched::init(topo, sc, policy, nr);
    trace::init(nr, cfg.trace);
    task::sched::set_idle_mwait(mwait);
    machine::scheduler_ready(nr);
}

/// Reports a start-up error (log line + `error` record) and fails the run.
fn fail(kind: &str, msg: &str) -> ! {
    log::error!("{msg}");
    Record::new("error")
        .str("kind", kind)
        .str("message", msg)
        .emit();
    end(ExitCode::Failure)
}

/// Reads the boot configuration from the ramdisk (defaults when there is none).
fn load_config(boot_info: &BootInfo) -> Result<BootConfig, alloc::string::String> {
    let Some(bytes) = mm::phys::ramdisk(boot_info) else {
        log::warn!("no ramdisk: running the default configuration");
        return Ok(BootConfig::default());
    };
    BootConfig::parse(bytes).map_err(|e| alloc::format!("{e}"))
}

fn print_banner(mem: &mm::MemoryInfo, acpi: &acpi::AcpiInfo, cfg: &BootConfig, bi: &BootInfo) {
    let madt_cpus = acpi.firmware.madt.enabled_cpus().count();
    log::info!(
        "schedlab {} | firmware {} | memory {} MiB (heap {} MiB) | ACPI: {} CPUs in MADT | experiment '{}'",
        env!("CARGO_PKG_VERSION"),
        mem.firmware.name(),
        mem.memory_bytes >> 20,
        mem.heap_bytes >> 20,
        madt_cpus,
        cfg.experiment,
    );
    let hypervisor = arch::identity::hypervisor_vendor();
    let brand = arch::identity::brand();
    log::info!(
        "cpu: {} '{}' | {}",
        arch::identity::vendor(),
        brand,
        match &hypervisor {
            Some(h) => alloc::format!("under a hypervisor/emulator ('{h}')"),
            None => alloc::string::String::from("no hypervisor (bare metal)"),
        }
    );
    log::info!(
        "ACPI clocks: PM timer {} | HPET {}",
        acpi.clock.pm_timer.map_or_else(
            || "none".into(),
            |t| alloc::format!("port {:#x}, {} bits", t.port, t.bits)
        ),
        acpi.clock
            .hpet
            .map_or_else(|| "none".into(), |a| alloc::format!("at {a:#x}")),
    );
    Record::new("boot")
        .str("version", env!("CARGO_PKG_VERSION"))
        .str("firmware", mem.firmware.name())
        .u64("memory_bytes", mem.memory_bytes)
        .u64("heap_bytes", mem.heap_bytes)
        .u64("memory_regions", mem.regions as u64)
        .u64("heap_used_bytes", mm::heap::usage().0 as u64)
        .u64("frames_free_bytes", mm::frames::free_bytes())
        .u64("madt_cpus", madt_cpus as u64)
        .raw("acpi_tables", &alloc::format!("{:?}", acpi.tables))
        .u64("rsdp", acpi.rsdp)
        .raw(
            "pm_timer_port",
            &acpi
                .clock
                .pm_timer
                .map_or_else(|| "null".into(), |t| alloc::format!("{}", t.port)),
        )
        .raw(
            "pm_timer_bits",
            &acpi
                .clock
                .pm_timer
                .map_or_else(|| "null".into(), |t| alloc::format!("{}", t.bits)),
        )
        .raw(
            "hpet_address",
            &acpi
                .clock
                .hpet
                .map_or_else(|| "null".into(), |a| alloc::format!("{a}")),
        )
        .str("experiment", &cfg.experiment)
        .str("label", &cfg.label)
        .u64("kernel_image_offset", bi.kernel_image_offset)
        .str("cpu_vendor", &arch::identity::vendor())
        .str("cpu_brand", &brand)
        .bool("hypervisor", hypervisor.is_some())
        .bool("icount", cfg.icount)
        .raw(
            "hypervisor_vendor",
            &hypervisor
                .as_deref()
                .map_or("null".into(), record::json_string),
        )
        .emit();
}

/// Emits the final `exit` record and leaves the machine.
fn end(code: ExitCode) -> ! {
    trace::dump();
    Record::new("exit").str("status", code.name()).emit();
    qemu::exit(code)
}
