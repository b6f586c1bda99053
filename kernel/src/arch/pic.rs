//! The legacy 8259 PICs: remapped away from the exception vectors and fully
//! masked. All our interrupts come from the local APIC; without this, a
//! spurious PIC interrupt would arrive on vector 8-15 and look like #DF etc.

use x86_64::instructions::port::Port;

/// First vector of the (masked) PIC range; a spurious IRQ 7/15 lands at +7/+15.
pub const PIC_VECTOR_BASE: u8 = 0x30;

/// Remaps both PICs to `PIC_VECTOR_BASE..+16` and masks every line.
pub fn disable() {
    let mut cmd1 = Port::<u8>::new(0x20);
    let mut data1 = Port::<u8>::new(0x21);
    let mut cmd2 = Port::<u8>::new(0xA0);
    let mut data2 = Port::<u8>::new(0xA1);
    // SAFETY: standard 8259 initialisation sequence (ICW1-ICW4) on the PIC's
    // fixed ports, followed by masking all lines; nothing else uses the PIC.
    unsafe {
        cmd1.write(0x11);
        cmd2.write(0x11);
        data1.write(PIC_VECTOR_BASE);
        data2.write(PIC_VECTOR_BASE + 8);
        data1.write(4);
        data2.write(2);
        data1.write(1);
        data2.write(1);
        data1.write(0xFF);
        data2.write(0xFF);
    }
}
