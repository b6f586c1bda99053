//! Prints the CPUID leaves `topology::cpuid::collect` reads on the calling CPU, in the
//! `CpuidLeaves::to_text` fixture format, followed (as comments) by the decoded view.
//! Pin it to capture a given CPU: `taskset -c 1 cargo run -p topology --example cpuid_dump`.

fn main() {
    #[cfg(target_arch = "x86_64")]
    {
        let leaves = topology::cpuid::collect(|leaf, sub| {
            let r = core::arch::x86_64::__cpuid_count(leaf, sub);
            [r.eax, r.ebx, r.ecx, r.edx]
        });
        print!("{}", leaves.to_text());
        match topology::cpuid::decode(&leaves) {
            Ok(id) => {
                println!(
                    "# vendor {:?} family {:#x} model {:#x} x2apic {:?}",
                    id.vendor, id.family, id.model, id.x2apic_id
                );
                println!("# layout {:?}", id.layout);
                for c in &id.caches {
                    println!(
                        "# L{} {:?} {} bytes {}-way sharing_shift {}",
                        c.level, c.kind, c.size_bytes, c.ways, c.sharing_shift
                    );
                }
                for w in &id.warnings {
                    println!("# warning: {w}");
                }
            }
            Err(e) => println!("# decode error: {e}"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    eprintln!("cpuid_dump only works on x86_64");
}
