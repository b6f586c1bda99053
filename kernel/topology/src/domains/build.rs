//! The construction passes of [`build_sched_domains_with`]; each names the Linux
//! function of `kernel/sched/topology.c` it mirrors.

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::flags::*;
use super::levels::{Level, LevelMasks, SdInit, sd_init, topology_levels};
use super::{CpuDomains, DomainConfig, SchedDomain, SchedDomains, SchedGroup, SpanFixup};
use crate::CpuId;
use crate::mask::CpuMask;
use crate::topo::Topology;

/// A domain before attachment: one per (cpu, level) reached by the cpu's walk.
struct Proto {
    /// Shared with the groups of the parent levels that this span becomes.
    span: Arc<CpuMask>,
    init: SdInit,
    groups: Vec<SchedGroup>,
    imb_numa_nr: u32,
}

/// `tree[cpu][level]`: `None` above the level at which the cpu's walk stopped.
type Tree = Vec<Vec<Option<Proto>>>;

fn span_at(tree: &Tree, cpu: CpuId, level: usize) -> Option<&Arc<CpuMask>> {
    tree.get(cpu)?.get(level)?.as_ref().map(|p| &p.span)
}

/// Builds every CPU's domain hierarchy (Linux `build_sched_domains` on the full CPU
/// map followed by `cpu_attach_domain` for each CPU).
pub fn build_sched_domains_with(topo: &Topology, cfg: &DomainConfig) -> SchedDomains {
    let levels = topology_levels(topo);
    let (mut tree, fixups) = build_spans(topo, &levels, cfg);
    build_groups(&mut tree, &levels, topo.nr_cpus());
    set_imb_numa_nr(&mut tree);
    let cpus = tree
        .into_iter()
        .enumerate()
        .map(|(cpu, protos)| attach(cpu, protos, &levels))
        .collect();
    SchedDomains { cpus, fixups }
}

/// Mirrors the per-CPU loop of `build_sched_domains` calling `build_sched_domain`: span =
/// level mask (intersected with the CPU map), widened by the child span when the
/// topology is broken; the walk stops at the first domain spanning every CPU.
fn build_spans(topo: &Topology, levels: &[Level], cfg: &DomainConfig) -> (Tree, Vec<SpanFixup>) {
    let n = topo.nr_cpus();
    let map = CpuMask::full(n);
    let mut fixups = Vec::new();
    let masks = LevelMasks::new(topo, levels);
    let mut tree: Tree = Vec::with_capacity(n);
    for cpu in 0..n {
        let mut chain: Vec<Option<Proto>> = (0..levels.len()).map(|_| None).collect();
        let mut child: Option<(Arc<CpuMask>, &'static str)> = None;
        for (li, level) in levels.iter().enumerate() {
            let mut span = masks.mask(li, level, cpu);
            span.and_assign(&map);
            span.set(cpu);
            if let Some((c, cname)) = &child
                && !c.is_subset(&span)
            {
                fixups.push(SpanFixup {
                    cpu,
                    child: cname,
                    parent: level.name,
                });
                span.or_assign(c);
            }
            let init = sd_init(level, span.weight(), cfg);
            let full = span == map;
            let span = Arc::new(span);
            child = Some((Arc::clone(&span), level.name));
            if let Some(slot) = chain.get_mut(li) {
                *slot = Some(Proto {
                    span,
                    init,
                    groups: Vec::new(),
                    imb_numa_nr: 0,
                });
            }
            if full {
                break;
            }
        }
        tree.push(chain);
    }
    (tree, fixups)
}

/// Builds the groups of every domain: `build_sched_groups` for ordinary levels and
/// `build_overlap_sched_groups` for `SD_OVERLAP` (NUMA) levels.
///
/// The groups are collected in one scratch list and moved out at their exact
/// size: one allocation per domain, none freed (a first-fit heap, like the
/// kernel's, then never fragments while hundreds of CPUs' domains are built).
fn build_groups(tree: &mut Tree, levels: &[Level], nr_cpus: usize) {
    let n = tree.len();
    // The single-CPU groups of the bottom level, one shared mask per CPU.
    let singles: Vec<Arc<CpuMask>> = (0..nr_cpus)
        .map(|i| Arc::new(CpuMask::from_cpus(nr_cpus, [i])))
        .collect();
    let mut scratch: Vec<SchedGroup> = Vec::new();
    for cpu in 0..n {
        for li in 0..levels.len() {
            let Some(span) = span_at(tree, cpu, li) else {
                break;
            };
            scratch.clear();
            let overlap = levels.get(li).is_some_and(|l| l.overlap);
            if overlap {
                overlap_groups(tree, cpu, li, span, &mut scratch);
            } else {
                plain_groups(tree, li, span, cpu, &singles, &mut scratch);
            }
            if let Some(Some(p)) = tree.get_mut(cpu).and_then(|c| c.get_mut(li)) {
                // Moved out (no reference-count traffic), allocated at its exact size;
                // the scratch list keeps its capacity for the next domain.
                let mut groups = Vec::with_capacity(scratch.len());
                groups.append(&mut scratch);
                p.groups = groups;
            }
        }
    }
}

/// Mirrors `build_sched_groups` + `get_group`: walking the span from `cpu` with wrap,
/// each not-yet-covered CPU `i` contributes the span of its child domain at this level
/// (or `{i}` at the bottom level).
fn plain_groups(
    tree: &Tree,
    li: usize,
    span: &CpuMask,
    cpu: CpuId,
    singles: &[Arc<CpuMask>],
    groups: &mut Vec<SchedGroup>,
) {
    let mut covered = CpuMask::new(span.nr_cpus());
    for i in span.iter_wrap(cpu) {
        if covered.contains(i) {
            continue;
        }
        let has_level = span_at(tree, i, li).is_some();
        let g = match li.checked_sub(1).and_then(|c| span_at(tree, i, c)) {
            Some(child) if has_level => Arc::clone(child),
            _ => match singles.get(i) {
                Some(s) => Arc::clone(s),
                None => Arc::new(CpuMask::from_cpus(span.nr_cpus(), [i])),
            },
        };
        covered.or_assign(&g);
        groups.push(SchedGroup {
            balance_mask: Arc::clone(&g),
            span: g,
        });
    }
}

/// Mirrors `find_descended_sibling`: from sibling level `lvl` of CPU `i`, descend while
/// the child leaves `sd_span`, then skip children equal to their parent (those are
/// removed as degenerate later). Returns the level whose child span is the group.
fn descended_sibling(tree: &Tree, i: CpuId, mut lvl: usize, sd_span: &CpuMask) -> usize {
    while let Some(c) = lvl.checked_sub(1).and_then(|c| span_at(tree, i, c)) {
        if c.is_subset(sd_span) {
            break;
        }
        lvl -= 1;
    }
    while let (Some(c), Some(s)) = (
        lvl.checked_sub(1).and_then(|c| span_at(tree, i, c)),
        span_at(tree, i, lvl),
    ) {
        if c != s {
            break;
        }
        lvl -= 1;
    }
    lvl
}

/// Mirrors `build_overlap_sched_groups` + `build_group_from_child_sched_domain` +
/// `build_balance_mask`.
fn overlap_groups(
    tree: &Tree,
    cpu: CpuId,
    li: usize,
    span: &CpuMask,
    groups: &mut Vec<SchedGroup>,
) {
    let mut covered = CpuMask::new(span.nr_cpus());
    for i in span.iter_wrap(cpu) {
        if covered.contains(i) {
            continue;
        }
        // Skip CPUs whose hierarchy stopped below this level (unequal depth).
        if !span_at(tree, i, li).is_some_and(|s| s.contains(i)) {
            continue;
        }
        let lvl = descended_sibling(tree, i, li, span);
        let g = match lvl
            .checked_sub(1)
            .and_then(|c| span_at(tree, i, c))
            .or_else(|| span_at(tree, i, lvl))
        {
            Some(g) => Arc::clone(g),
            None => continue,
        };
        // build_balance_mask: CPUs of the group whose own child at this level spans
        // exactly the group.
        let mut bal = CpuMask::new(span.nr_cpus());
        for j in g.iter() {
            if span_at(tree, j, li).is_some()
                && li
                    .checked_sub(1)
                    .and_then(|c| span_at(tree, j, c))
                    .is_some_and(|c| Arc::ptr_eq(c, &g) || **c == *g)
            {
                bal.set(j);
            }
        }
        let bal = if bal.is_empty() || bal == *g {
            Arc::clone(&g)
        } else {
            Arc::new(bal)
        };
        covered.or_assign(&g);
        groups.push(SchedGroup {
            span: g,
            balance_mask: bal,
        });
    }
}

/// Mirrors the `imb_numa_nr` loop at the end of `build_sched_domains` (5.18+): the
/// first domain above the LLC allows `nr_llcs` tasks of imbalance (span/8 with one LLC),
/// higher ones scale it by `span / first NUMA span`.
fn set_imb_numa_nr(tree: &mut Tree) {
    for chain in tree.iter_mut() {
        let mut imb = 0u32;
        let mut imb_span = 1u32;
        let weights: Vec<Option<(u32, SdFlags)>> = chain
            .iter()
            .map(|p| p.as_ref().map(|p| (p.span.weight() as u32, p.init.flags)))
            .collect();
        for li in 0..chain.len() {
            let Some(Some((w, f))) = weights.get(li).copied() else {
                break;
            };
            let child = li
                .checked_sub(1)
                .and_then(|c| weights.get(c).copied().flatten());
            let value = match child {
                Some((cw, cf)) if !f.contains(SD_SHARE_LLC) && cf.contains(SD_SHARE_LLC) => {
                    let nr_llcs = w.checked_div(cw).unwrap_or(1);
                    imb = if nr_llcs == 1 { w >> 3 } else { nr_llcs }.max(1);
                    imb_span = weights
                        .iter()
                        .skip(li + 1)
                        .map_while(|x| *x)
                        .find(|(_, pf)| pf.contains(SD_NUMA))
                        .map_or(w, |(pw, _)| pw);
                    imb
                }
                _ => imb.saturating_mul(w.checked_div(imb_span).unwrap_or(1).max(1)),
            };
            if let Some(Some(p)) = chain.get_mut(li) {
                p.imb_numa_nr = value;
            }
        }
    }
}

/// `sd_degenerate`: a single CPU, or no flag that needs groups (with at least two
/// groups) and no `SD_WAKE_AFFINE`.
fn sd_degenerate(sd: &SchedDomain) -> bool {
    if sd.span_weight() == 1 {
        return true;
    }
    if sd.flags.intersects(SD_DEGENERATE_GROUPS_MASK) && sd.groups.len() > 1 {
        return false;
    }
    !sd.flags.contains(SD_WAKE_AFFINE)
}

/// `sd_parent_degenerate`: the parent is degenerate, or it has the child's span and
/// no flag the child lacks (group-needing flags ignored when it has one group).
fn sd_parent_degenerate(child: &SchedDomain, parent: &SchedDomain) -> bool {
    if sd_degenerate(parent) {
        return true;
    }
    if child.span != parent.span {
        return false;
    }
    let mut pflags = parent.flags;
    if parent.groups.len() <= 1 {
        pflags = pflags.without(SD_DEGENERATE_GROUPS_MASK);
    }
    (pflags & !child.flags) == SdFlags::EMPTY
}

/// Mirrors `cpu_attach_domain` (degenerate removal, `SD_PREFER_SIBLING` transfer to
/// the child of a removed parent) and `update_top_cache_domain`.
fn attach(cpu: CpuId, protos: Vec<Option<Proto>>, levels: &[Level]) -> CpuDomains {
    let mut ds: Vec<SchedDomain> = Vec::new();
    for (li, p) in protos.into_iter().enumerate() {
        let (Some(p), Some(level)) = (p, levels.get(li)) else {
            break;
        };
        ds.push(SchedDomain {
            name: level.name,
            level: li,
            span: Arc::unwrap_or_clone(p.span),
            flags: p.init.flags,
            imbalance_pct: p.init.imbalance_pct,
            min_interval_ms: p.init.min_interval_ms,
            max_interval_ms: p.init.max_interval_ms,
            busy_factor: p.init.busy_factor,
            cache_nice_tries: p.init.cache_nice_tries,
            groups: p.groups,
            numa_distance: level.numa_distance,
            imb_numa_nr: p.imb_numa_nr,
        });
    }
    let mut tmp = 0;
    while let (Some(c), Some(p)) = (ds.get(tmp), ds.get(tmp + 1)) {
        if sd_parent_degenerate(c, p) {
            let pflags = p.flags;
            ds.remove(tmp + 1);
            if pflags.contains(SD_PREFER_SIBLING)
                && let Some(c) = ds.get_mut(tmp)
            {
                c.flags |= SD_PREFER_SIBLING;
            }
        } else {
            tmp += 1;
        }
    }
    if ds.first().is_some_and(sd_degenerate) {
        ds.remove(0);
    }
    update_top_cache_domain(cpu, ds)
}

/// Mirrors `update_top_cache_domain`: `sd_llc` = highest `SD_SHARE_LLC` domain (walk
/// stops at the first domain without it), `sd_llc_id` = its first CPU, `sd_share_id` =
/// first CPU of the lowest `SD_CLUSTER` domain else the LLC id, `sd_numa` = lowest
/// `SD_NUMA` domain.
fn update_top_cache_domain(cpu: CpuId, domains: Vec<SchedDomain>) -> CpuDomains {
    let llc = domains
        .iter()
        .take_while(|d| d.flags.contains(SD_SHARE_LLC))
        .count()
        .checked_sub(1);
    let llc_id = llc
        .and_then(|i| domains.get(i))
        .and_then(|d| d.span.first())
        .unwrap_or(cpu);
    let share_id = domains
        .iter()
        .find(|d| d.flags.contains(SD_CLUSTER))
        .and_then(|d| d.span.first())
        .unwrap_or(llc_id);
    let numa = domains.iter().position(|d| d.flags.contains(SD_NUMA));
    CpuDomains {
        domains,
        llc,
        numa,
        llc_id,
        share_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::SyntheticSpec;

    fn names(sd: &SchedDomains, cpu: CpuId) -> Vec<&'static str> {
        sd.domains(cpu).iter().map(|d| d.name).collect()
    }

    #[test]
    fn degenerate_rules() {
        // One socket of 4 single-thread cores: SMT (weight 1) and PKG (= MC) vanish.
        let t = Topology::synthetic(&SyntheticSpec::simple(1, 4, 1)).unwrap();
        let sd = build_sched_domains_with(&t, &DomainConfig::DEFAULT);
        assert_eq!(names(&sd, 0), ["MC"]);
        assert_eq!(sd.domains(0)[0].level, 1);
        // Single CPU: nothing left.
        let t = Topology::synthetic(&SyntheticSpec::simple(1, 1, 1)).unwrap();
        let sd = build_sched_domains_with(&t, &DomainConfig::DEFAULT);
        assert!(sd.domains(0).is_empty());
        assert_eq!(sd.sd_llc_size(0), 1);
        assert_eq!(sd.sd_llc_id(0), 0);
    }

    #[test]
    fn prefer_sibling_transfer() {
        // A removed parent's PREFER_SIBLING moves down to its child.
        let t = Topology::synthetic(&SyntheticSpec::simple(1, 2, 2)).unwrap();
        let sd = build_sched_domains_with(&t, &DomainConfig::DEFAULT);
        assert_eq!(names(&sd, 0), ["SMT", "MC"]);
        assert!(sd.domains(0)[1].flags.contains(SD_PREFER_SIBLING));
    }
}
