//! The seed threads' own numbers next to schedlab's: the published rows
//! ([`data`], carried in `xtask/data/seeds/`), which schedlab cell each maps
//! to or why none does ([`mapping`]), the per-row verdict — same direction,
//! significance, ratio of the changes ([`verdict`]) — and the table and
//! JSON records `cargo xtask seed N` prints ([`report`]). Issue 10, part 4;
//! what each seed reproduces is summarised in `docs/seeds.md`.

pub mod data;
pub mod mapping;
pub mod report;
pub mod verdict;
