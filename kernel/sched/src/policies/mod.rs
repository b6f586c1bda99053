//! Alternative policies built on the [`crate::SchedPolicy`] seam, and the
//! registry that selects one by name for a run.

pub mod prev_idle;

use alloc::boxed::Box;
use alloc::string::String;

use crate::policy::{DynPolicy, FairPolicy};

/// Names accepted by [`by_name`], the default first.
pub const POLICIES: &[&str] = &["fair", "prev_idle"];

/// The policy called `name` (its `SchedPolicy::name`).
pub fn by_name(name: &str) -> Result<DynPolicy, String> {
    match name {
        "fair" => Ok(Box::new(FairPolicy)),
        "prev_idle" => Ok(Box::new(prev_idle::PrevIdlePolicy::default())),
        other => Err(alloc::format!(
            "unknown policy '{other}' (known: {})",
            POLICIES.join(", ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SchedPolicy;

    #[test]
    fn every_registered_policy_is_found_under_its_own_name() {
        for name in POLICIES {
            assert_eq!(by_name(name).unwrap().name(), *name);
        }
        let err = by_name("nope").err().expect("unknown name is an error");
        assert!(err.contains("unknown policy 'nope'"), "{err}");
    }
}
