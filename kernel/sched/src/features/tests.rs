//! Feature-string parsing tests.
use super::*;
use alloc::format;

#[test]
fn defaults_follow_linux() {
    let f = Features::default();
    assert!(f.has(Feat::WaIdle) && f.has(Feat::WaWeight) && f.has(Feat::SisUtil));
    assert!(!f.has(Feat::NextBuddy) && !f.has(Feat::LbMin));
    assert!(f.has(Feat::WaIdlePrev) && !f.has(Feat::RunnableLoad));
    assert!(f.has(Feat::WakeeUnbound) && !f.has(Feat::WakeeStacked));
}

#[test]
fn parse_applies_on_top_of_defaults() {
    let f = Features::parse("WA_IDLE,NO_WA_WEIGHT,SIS_UTIL").unwrap();
    assert!(f.has(Feat::WaIdle) && !f.has(Feat::WaWeight) && f.has(Feat::SisUtil));
    assert_eq!(f.with(Feat::WaWeight, true), Features::default());
}

#[test]
fn display_round_trips() {
    let f = Features::parse("NO_WA_IDLE_PREV RUNNABLE_LOAD,WAKEE_CROSS_SMT").unwrap();
    let s = format!("{f}");
    assert!(s.contains("NO_WA_IDLE_PREV") && s.contains("WAKEE_CROSS_SMT"));
    assert!(!s.contains("WAKEE_UNBOUND"));
    assert_eq!(Features::parse(&s).unwrap(), f);
    assert_eq!(
        Features::parse(&format!("{}", Features::default())).unwrap(),
        Features::default()
    );
}

#[test]
fn unknown_names_are_errors() {
    assert_eq!(
        Features::parse("WA_IDLE,BOGUS"),
        Err(FeatureError::Unknown("BOGUS".into()))
    );
    assert_eq!(
        Features::parse("NO_BOGUS"),
        Err(FeatureError::Unknown("NO_BOGUS".into()))
    );
    assert!(matches!(
        Features::parse("NO_WAKEE_STACKED"),
        Err(FeatureError::ClearWakeeMode(_))
    ));
    let msg = format!("{}", Features::parse("XYZ").unwrap_err());
    assert!(msg.contains("unknown scheduler feature 'XYZ'"));
}

#[test]
fn wakee_modes_are_exclusive() {
    let f = Features::parse("WAKEE_STACKED,WAKEE_CROSS_CORE").unwrap();
    assert!(f.has(Feat::WakeeCrossCore) && !f.has(Feat::WakeeStacked));
    assert!(!f.has(Feat::WakeeUnbound));
}

#[test]
fn linux_6_12_sets_what_6_12_changes() {
    let f = Features::parse("LINUX_6_12").unwrap();
    for x in [
        Feat::ImbPct117,
        Feat::ImbalancedActiveBalance,
        Feat::DelayDequeue,
        Feat::NohzIdle,
        Feat::BaseSlice700us,
        Feat::NiRandom,
        Feat::SmIdle,
        Feat::RootHLoad,
        Feat::GroupSmtBalance,
    ] {
        assert!(f.has(x), "{x:?}");
    }
    // DELAY_ZERO and the 6.x EEVDF switches are on by default already.
    assert!(f.has(Feat::DelayZero) && f.has(Feat::RunToParity) && f.has(Feat::PlaceLag));
    assert_eq!(
        Features::parse("LINUX_6_12,NO_LINUX_6_12").unwrap(),
        Features::default()
    );
}
