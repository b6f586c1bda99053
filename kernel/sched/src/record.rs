//! The JSON result record of a run: configuration (pick policy, policy
//! name, feature string, tunables) plus every statistic and per-CPU
//! runqueue counters, so a result always says what produced it.

use crate::policy::SchedPolicy;
use crate::sched::Scheduler;
use core::fmt::{self, Write};

impl<P: SchedPolicy> Scheduler<P> {
    /// Write `{"policy":..,"pick":..,"features":..,"tunables":{..},
    /// "stats":{..},"cpus":[..]}`.
    pub fn write_json(&self, w: &mut impl Write) -> fmt::Result {
        let stats = self.stats();
        let c = self.core();
        let t = &c.cfg.tunables;
        write!(
            w,
            "{{\"policy\":\"{}\",\"pick\":\"{}\",\"features\":\"{}\",",
            self.policy.name(),
            c.cfg.pick.name(),
            c.cfg.features
        )?;
        write!(
            w,
            "\"tunables\":{{\"factor\":{},\"sched_latency_ns\":{},\"min_granularity_ns\":{},\"wakeup_granularity_ns\":{},\"base_slice_ns\":{},\"migration_cost_ns\":{},\"tick_ns\":{}}},",
            t.factor,
            t.sched_latency_ns,
            t.min_granularity_ns,
            t.wakeup_granularity_ns,
            t.base_slice_ns,
            t.migration_cost_ns,
            t.tick_ns
        )?;
        w.write_str("\"stats\":")?;
        stats.write_json(w)?;
        w.write_str(",\"cpus\":[")?;
        for (i, rq) in c.rqs.iter().enumerate() {
            if i > 0 {
                w.write_char(',')?;
            }
            write!(
                w,
                "{{\"cpu\":{i},\"nr_running\":{},\"load_avg\":{},\"util_avg\":{},\"idle_ns\":{},\"ttwu_count\":{},\"ttwu_local\":{}}}",
                rq.nr_running(),
                rq.cfs.avg.load_avg,
                rq.cfs.avg.util_avg,
                rq.idle_time(rq.clock),
                rq.ttwu_count,
                rq.ttwu_local
            )?;
        }
        w.write_str("]}")
    }
}

#[cfg(test)]
mod tests {
    use crate::config::PickPolicy;
    use crate::task::TaskPolicy;
    use crate::testutil::{sched, spec};

    #[test]
    fn run_record_names_its_configuration() {
        let s = sched(&spec(1, 2, 1, 1), PickPolicy::Eevdf, "NO_WA_IDLE_PREV");
        s.wake_up_new_task(None, 0, 0, TaskPolicy::Normal, 10);
        let mut out = String::new();
        s.write_json(&mut out).unwrap();
        assert!(out.starts_with("{\"policy\":\"fair\",\"pick\":\"EEVDF\",\"features\":\""));
        assert!(out.contains("NO_WA_IDLE_PREV"));
        assert!(out.contains("\"cpus\":[{\"cpu\":0,"));
        assert!(out.contains("\"fork_targets\":["));
        assert_eq!(out.matches('{').count(), out.matches('}').count());
        assert_eq!(out.matches('[').count(), out.matches(']').count());
    }
}
