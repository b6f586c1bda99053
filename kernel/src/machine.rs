//! Bringing the whole machine up: clock, APIC, every AP, the tick on every
//! CPU, and the topology model (ACPI + each CPU's own CPUID leaves ->
//! `topology::Topology` -> scheduling domains).

use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, Ordering};

use topology::acpi::Firmware;
use topology::{SchedDomains, Topology};

use crate::acpi::ClockHardware;
use crate::arch::apic::{self, TimerSetup};
use crate::arch::smp::{self, ApStatus};
use crate::arch::time::{self, Calibration};
use crate::arch::{percpu, timer};

/// Everything known about the running machine after bring-up.
pub struct Machine {
    pub topology: Topology,
    pub domains: SchedDomains,
    /// Start-up result of every AP, in logical order (cpu 1, 2, ...).
    pub aps: Vec<ApStatus>,
    /// TSC frequency, where it came from, and the CPU's clock facts.
    pub tsc: Calibration,
    pub timer: TimerSetup,
    pub hz: u32,
    /// TSC time from reset (TSC = 0) to every AP online or given up, ns.
    pub reset_to_online_ns: u64,
    /// Time from TSC calibration (early kernel start) to the same point, ns.
    pub kernel_to_online_ns: u64,
    pub x2apic: bool,
    /// Number of topology warnings logged.
    pub warnings: usize,
    /// Physical memory ranges of each node, from the SRAT's enabled memory
    /// entries whose proximity domain has CPUs (empty without an SRAT).
    pub memory_nodes: Vec<MemoryNode>,
    /// Virtual address at which physical memory is mapped (the heap lives
    /// in that window, so a heap address minus this is its physical address).
    pub phys_offset: u64,
}

/// TSC time the boot CPU spent on each step from "all online" to the
/// finished domains (logged; docs/topology.md, "Cost").
#[derive(Clone, Copy, Debug, Default)]
struct BuildTimes {
    /// Decoding every CPU's CPUID leaves.
    decode_ns: u64,
    /// `topology::assemble` (MADT + SRAT + SLIT + CPUID -> `Topology`).
    assemble_ns: u64,
    /// `topology::build_sched_domains`.
    domains_ns: u64,
}

/// A physical memory range and the node (dense, as in the topology) it
/// belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryNode {
    pub base: u64,
    pub length: u64,
    pub node: u32,
}

impl Machine {
    /// The node holding physical range `[phys, phys + len)`, if one SRAT
    /// memory range covers all of it.
    pub fn node_of_range(&self, phys: u64, len: u64) -> Option<u32> {
        self.memory_nodes
            .iter()
            .find(|r| phys >= r.base && phys + len <= r.base + r.length)
            .map(|r| r.node)
    }
}

/// Node of each enabled SRAT memory range: its proximity domain mapped to the
/// topology's node numbering through the CPUs of that domain.
fn memory_nodes(fw: &Firmware, topo: &Topology) -> Vec<MemoryNode> {
    let Some(srat) = fw.srat.as_ref() else {
        return Vec::new();
    };
    srat.memory
        .iter()
        .filter(|m| m.enabled && m.length > 0)
        .filter_map(|m| {
            let node = topo
                .cpus
                .iter()
                .find(|c| srat.domain_of(c.apic_id) == Some(m.proximity_domain))?
                .node;
            Some(MemoryNode {
                base: m.base,
                length: m.length,
                node,
            })
        })
        .collect()
}

impl Machine {
    /// Whether logical CPU `cpu` is running.
    pub fn is_online(&self, cpu: usize) -> bool {
        percpu::get(cpu).is_some_and(|p| p.is_online())
    }
}

/// Set once the scheduler exists; APs idle in `hlt` until then.
static SCHEDULER_READY: AtomicBool = AtomicBool::new(false);

/// Lets every CPU enter the scheduler's idle loop: sets the flag, then wakes
/// every AP (halted without a tick, see [`ap_main`]) with a reschedule IPI.
pub fn scheduler_ready(nr_cpus: usize) {
    crate::watchdog::start_heartbeat(nr_cpus);
    SCHEDULER_READY.store(true, Ordering::Release);
    for p in percpu::online().filter(|p| p.cpu != 0) {
        crate::arch::ipi::send_reschedule(p.cpu as usize);
    }
}

/// What every AP runs once online: halts, with no tick, until the scheduler is
/// ready, then starts its tick and enters the scheduler's idle loop. Idle APs
/// that ticked while the boot CPU built the topology and printed the report
/// took most of the host's time under TCG (254 CPUs x 250 Hz: at 255 CPUs,
/// about half of the boot CPU's time from "all online" to the first record).
fn ap_main() -> ! {
    use crate::arch::irq;
    let off = loop {
        // The flag is tested with interrupts off and `sti; hlt` resumes them
        // atomically, so the waking IPI cannot slip in between test and halt.
        let off = irq::disable();
        if SCHEDULER_READY.load(Ordering::Acquire) {
            break off;
        }
        irq::enable_and_hlt(off);
    };
    timer::start_this_cpu();
    irq::enable(off);
    crate::task::sched::idle_loop()
}

/// Period of QEMU's virtual clock the bring-up is aligned to under `-icount`
/// (a whole second: a multiple of every free-running QEMU timer period that
/// the guest cannot stop, i.e. the RTC's update cycle and TCG's 100 ms
/// round-robin kick).
pub const ICOUNT_ALIGN_NS: u64 = 1_000_000_000;

/// Under `-icount`, waits (halted, so QEMU jumps its clock: no host time) until
/// the next whole second of QEMU's virtual clock. The firmware and bootloader
/// read the disk image with asynchronous host I/O, so the virtual time at
/// which the kernel starts varies with the host; QEMU timers that run from
/// reset (TCG's round-robin kick, the RTC) would then meet the kernel's own
/// timers at a different phase in every run, which changes how the vCPUs'
/// instruction slices interleave. Starting at a whole second makes every
/// phase the same. PIT channel 0, programmed by the firmware, is stopped
/// first, and every AP is sent INIT, so only the boot CPU runs: OVMF's APs
/// are still executing after ExitBootServices (what the runs show: with
/// them, and not with one vCPU or SeaBIOS, whose APs halt), and under `-icount` their
/// instructions share the virtual clock with the boot CPU's in round-robin
/// slices whose phase follows the firmware (two 2-vCPU UEFI runs at once
/// differed from the calibration on; one vCPU, or SeaBIOS, whose APs halt,
/// repeated exactly). It runs before the TSC
/// calibration: a calibration timed against the HPET before the alignment
/// gave 1,000,000,179 and 1,000,000,120 Hz in two UEFI runs at once (OVMF
/// ends at a different virtual time in each), and every later record
/// differed with it.
fn align_to_virtual_clock(ap_ids: &[u32]) {
    time::stop_pit_channel0();
    // Only the APs the kernel will start (MADT-enabled): a CPU left in
    // wait-for-SIPI for good would, on real hardware, turn a broadcast
    // machine check into a shutdown.
    for &id in ap_ids {
        apic::send_init(id);
    }
    // Under -icount the TSC is QEMU's virtual clock in ns (see `halt_until_tsc`).
    let target = (time::rdtsc() / ICOUNT_ALIGN_NS + 1) * ICOUNT_ALIGN_NS;
    apic::halt_until_tsc(target);
}

/// Brings up every CPU the MADT lists and builds the topology. Errors are
/// messages naming the table or CPU at fault. `clock`: the timers the TSC
/// can be calibrated against. `icount`: running under QEMU `-icount`; the
/// bring-up is aligned to its virtual clock first.
pub fn bring_up(
    fw: &Firmware,
    clock: &ClockHardware,
    phys_offset: u64,
    hz: u32,
    icount: bool,
    domain_config: &topology::DomainConfig,
) -> Result<Machine, alloc::string::String> {
    apic::init_bsp(phys_offset);
    let bsp_apic = apic::id();
    let ap_ids: Vec<u32> = fw
        .madt
        .enabled_cpus()
        .map(|c| c.apic_id)
        .filter(|&a| a != bsp_apic)
        .collect();
    if icount {
        align_to_virtual_clock(&ap_ids);
    }
    // Kernel times (`now_ns`) start when the calibration ends, with or
    // without the alignment before it.
    let tsc = time::init(clock, phys_offset, icount);
    percpu::current().online.store(true, Ordering::Release);
    let timer_setup = timer::init(hz);
    timer::start_this_cpu();
    crate::arch::irq::enable_unguarded();

    let bsp_listed = fw.madt.enabled_cpus().any(|c| c.apic_id == bsp_apic);
    if !bsp_listed {
        return Err(alloc::format!(
            "MADT: the boot CPU (APIC id {bsp_apic}) is not an enabled processor entry"
        ));
    }
    let aps = smp::start_aps(&ap_ids, phys_offset, ap_main, icount);
    let reset_to_online_ns = time::tsc_to_ns(time::rdtsc());
    let kernel_to_online_ns = time::now_ns();
    log::info!(
        "all online: {} of {} CPUs; building the topology",
        1 + aps.iter().filter(|a| a.online).count(),
        1 + aps.len()
    );

    let mut identities = Vec::new();
    for p in percpu::online() {
        let id = topology::cpuid::decode(&p.cpuid)
            .map_err(|e| alloc::format!("CPUID of cpu {} (APIC id {}): {e}", p.cpu, p.apic_id))?;
        identities.push((p.apic_id, id));
    }
    let decoded_ns = time::now_ns();
    let (topo, warnings) =
        topology::assemble(&fw.madt, fw.srat.as_ref(), fw.slit.as_ref(), &identities)
            .map_err(|e| alloc::format!("topology: {e}"))?;
    for w in &warnings {
        log::warn!("topology: {w}");
    }
    for p in percpu::all() {
        let t = topo.cpus.get(p.cpu as usize);
        if t.map(|t| t.apic_id) != Some(p.apic_id) {
            return Err(alloc::format!(
                "topology numbering disagrees with start-up order: cpu {} has APIC id {} but the model says {:?}",
                p.cpu,
                p.apic_id,
                t.map(|t| t.apic_id)
            ));
        }
    }
    let assembled_ns = time::now_ns();
    let domains = topology::build_sched_domains_with(&topo, domain_config);
    let built_ns = time::now_ns();
    let memory_nodes = memory_nodes(fw, &topo);
    let build = BuildTimes {
        decode_ns: decoded_ns.saturating_sub(kernel_to_online_ns),
        assemble_ns: assembled_ns.saturating_sub(decoded_ns),
        domains_ns: built_ns.saturating_sub(assembled_ns),
    };
    log::info!(
        "topology built in {} us: CPUID decoded {} us, assembled {} us, sched domains {} us (TSC time on CPU 0)",
        (build.decode_ns + build.assemble_ns + build.domains_ns) / 1000,
        build.decode_ns / 1000,
        build.assemble_ns / 1000,
        build.domains_ns / 1000,
    );
    Ok(Machine {
        memory_nodes,
        phys_offset,
        topology: topo,
        domains,
        aps,
        tsc,
        timer: timer_setup,
        hz,
        reset_to_online_ns,
        kernel_to_online_ns,
        x2apic: apic::is_x2apic(),
        warnings: warnings.len(),
    })
}
