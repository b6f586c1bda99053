//! The domain builder's complete output (every CPU's domains with every field,
//! groups in order with their balance masks, the cached LLC/NUMA pointers and
//! the span fixups) on fixed shapes and on deterministic pseudo-random valid and
//! broken topologies, compared by digest with the output of the builder before
//! it was made linear-time (issue 12, "Scale"; commit 8b2a41d). A faster builder
//! must decide exactly what the old one did.
//!
//! `SCHEDLAB_PRINT_DIGESTS=1 cargo test -p topology --test build_equivalence -- --nocapture`
//! prints the digests (only to be refreshed when the domain *rules* change on purpose).

use std::fmt::Write;
use topology::*;

/// FNV-1a, 64 bits.
fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Every observable of the built domains as text.
fn dump(t: &Topology) -> String {
    let sd = build_sched_domains(t);
    let mut s = String::new();
    for cpu in 0..sd.nr_cpus() {
        writeln!(
            s,
            "cpu {cpu} llc {:?} llc_size {} llc_id {} share {} numa {:?}",
            sd.sd_llc(cpu).map(|d| d.level),
            sd.sd_llc_size(cpu),
            sd.sd_llc_id(cpu),
            sd.sd_share_id(cpu),
            sd.sd_numa(cpu).map(|d| d.level),
        )
        .unwrap();
        for d in sd.domains(cpu) {
            write!(
                s,
                " {} l{} [{}] {} pct{} min{} max{} bf{} cnt{} dist{:?} imb{} groups",
                d.name,
                d.level,
                d.span,
                d.flags,
                d.imbalance_pct,
                d.min_interval_ms,
                d.max_interval_ms,
                d.busy_factor,
                d.cache_nice_tries,
                d.numa_distance,
                d.imb_numa_nr
            )
            .unwrap();
            for g in &d.groups {
                write!(s, " {{{}|{}}}", g.span, g.balance_mask).unwrap();
            }
            s.push('\n');
        }
    }
    for f in sd.fixups() {
        writeln!(s, "fixup {} {}->{}", f.cpu, f.child, f.parent).unwrap();
    }
    s
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

// Index loops: the random draws must keep their order (the digests depend on it).
#[allow(clippy::needless_range_loop)]
fn dist(n: usize, rng: &mut Rng) -> Vec<Vec<u32>> {
    let mut d = vec![vec![10; n]; n];
    for i in 0..n {
        for j in i + 1..n {
            let v = 11 + rng.below(40) as u32;
            d[i][j] = v;
            d[j][i] = v;
        }
    }
    d
}

fn ring(n: usize) -> Vec<Vec<u32>> {
    (0..n)
        .map(|a| {
            (0..n)
                .map(|b| {
                    let h = (a + n - b) % n;
                    let h = h.min(n - h) as u32;
                    if h == 0 { 10 } else { 10 + 6 * h }
                })
                .collect()
        })
        .collect()
}

/// Fixed shapes: the presets' kinds of machine and the big ones of issue 12.
fn fixed() -> Vec<(String, Topology)> {
    let mut v = Vec::new();
    let mut add = |name: &str, spec: SyntheticSpec| {
        v.push((name.to_string(), Topology::synthetic(&spec).unwrap()));
    };
    let with = |spec: SyntheticSpec, nodes: u32, d: Option<Vec<Vec<u32>>>| SyntheticSpec {
        nodes,
        distances: d,
        ..spec
    };
    add("1x1x1", SyntheticSpec::simple(1, 1, 1));
    add("2x2x2 2n", with(SyntheticSpec::simple(2, 2, 2), 2, None));
    add(
        "4x4x1 4n ring",
        with(SyntheticSpec::simple(4, 4, 1), 4, Some(ring(4))),
    );
    add("1x255x1", SyntheticSpec::simple(1, 255, 1));
    add("2x60x2 2n", with(SyntheticSpec::simple(2, 60, 2), 2, None));
    let d4 = vec![
        vec![10, 12, 21, 21],
        vec![12, 10, 21, 21],
        vec![21, 21, 10, 12],
        vec![21, 21, 12, 10],
    ];
    add(
        "2x2dx28x2 4n",
        SyntheticSpec {
            dies_per_socket: 2,
            ..with(SyntheticSpec::simple(2, 28, 2), 4, Some(d4))
        },
    );
    add(
        "2x96x2 2n llc24",
        SyntheticSpec {
            cpus_per_llc: Some(24),
            ..with(SyntheticSpec::simple(2, 96, 2), 2, None)
        },
    );
    add(
        "8x8x2 8n ring",
        with(SyntheticSpec::simple(8, 8, 2), 8, Some(ring(8))),
    );
    add(
        "1x16x1 4n snc",
        with(SyntheticSpec::simple(1, 16, 1), 4, None),
    );
    add(
        "4x128x2 4n",
        with(SyntheticSpec::simple(4, 128, 2), 4, None),
    );
    v
}

/// Random valid synthetic shapes (as `domain_props.rs`, deterministic).
fn random_valid(rng: &mut Rng, k: usize) -> Vec<(String, Topology)> {
    let mut v = Vec::new();
    while v.len() < k {
        let sockets = 1 + rng.below(4) as u32;
        let dies = 1 + rng.below(2) as u32;
        let cores = 1 + rng.below(8) as u32;
        let threads = [1, 2, 4][rng.below(3) as usize];
        let per_socket = dies * cores;
        let mut nodes: Vec<u32> = (1..=sockets)
            .filter(|n| sockets.is_multiple_of(*n))
            .collect();
        nodes.extend(
            (2..=per_socket)
                .filter(|k| per_socket.is_multiple_of(*k))
                .map(|k| k * sockets)
                .filter(|&n| n <= 16),
        );
        let n = nodes[rng.below(nodes.len() as u64) as usize];
        let llc = match rng.below(2) {
            0 => None,
            _ => Some((1 + rng.below(per_socket as u64) as u32) * threads),
        };
        let distances = match rng.below(3) {
            0 => None,
            _ => Some(dist(n as usize, rng)),
        };
        let spec = SyntheticSpec {
            sockets,
            dies_per_socket: dies,
            cores_per_die: cores,
            threads_per_core: threads,
            nodes: n,
            cpus_per_llc: llc,
            distances,
        };
        if let Ok(t) = Topology::synthetic(&spec) {
            v.push((format!("{spec:?}"), t));
        }
    }
    v
}

/// Random arbitrary (mostly broken) topologies, as the fuzz test feeds the builder:
/// SMT, LLC and node ids drawn independently, so children need not nest in parents.
fn random_broken(rng: &mut Rng, k: usize) -> Vec<(String, Topology)> {
    (0..k)
        .map(|i| {
            let n = 1 + rng.below(24) as usize;
            let nodes = 1 + rng.below(4) as usize;
            let cpus = (0..n)
                .map(|c| CpuTopo {
                    cpu: c,
                    apic_id: c as u32,
                    package: rng.below(3) as u32,
                    die: rng.below(3) as u32,
                    core: rng.below(n as u64) as u32,
                    thread: 0,
                    node: rng.below(nodes as u64) as u32,
                    llc: rng.below(4) as u32,
                })
                .collect();
            let t = Topology {
                cpus,
                nr_nodes: nodes,
                distance: dist(nodes, rng),
                caches: Vec::new(),
            };
            (format!("broken {i}"), t)
        })
        .collect()
}

fn all() -> Vec<(String, Topology)> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut v = fixed();
    v.extend(random_valid(&mut rng, 120));
    v.extend(random_broken(&mut rng, 200));
    v
}

/// Digests of the builder at commit 8b2a41d, in the order of [`all`].
const EXPECTED: &[u64] = &[
    0x70f0a8ff4ca0aca1,
    0x0cf6cf4ac7d156ed,
    0x1842e67db9cec18b,
    0xde957f4860564ea6,
    0xbb27a52ff2cba945,
    0x714492bb2b435593,
    0xc6830e13567c4103,
    0xfa215cd7f7903d7f,
    0x97f836d805cd0b23,
    0xfba27c72695a3937,
    0x659b3a1f1d467d6c,
    0xecd856a646b7a2c9,
    0x01008f23e4b75da9,
    0xabfa238914b2deb1,
    0x02668024865ec18d,
    0x8eda21c1ff5203e3,
    0xbcf3febca26d47ab,
    0xff2b20d97155b8bd,
    0x05a53846217d8373,
    0x516ddf63db4d14db,
    0xb6ffcea3fd51804e,
    0xb6acacb05d76a44d,
    0x65c366a16f6bd474,
    0xa964ae16122dbc49,
    0x2a277b6b786dcd51,
    0xd1d1fcc544e757b7,
    0xd43970730c4cb74d,
    0x8d796550aa0e4fec,
    0xa8117d0191dd322f,
    0x688772536e70dac7,
    0xd43970730c4cb74d,
    0x70f0a8ff4ca0aca1,
    0x65c366a16f6bd474,
    0xd43970730c4cb74d,
    0xaa4b885c1234aa9b,
    0x283c55fd84c37735,
    0x87e0dc3b59d305c1,
    0x43d04befd11abf00,
    0xf722615f0139ecaa,
    0x7ba6318c54cf6adb,
    0xa84694666505c3f3,
    0x7d60593e5ef66895,
    0x659b3a1f1d467d6c,
    0xdfcb9ce597a46429,
    0x18b09c96a828d8ff,
    0x5c47cb9ad8d134c9,
    0x7f88046ae0dba0ff,
    0xa75784d9f313b5db,
    0x637074b3f98b8edd,
    0x4774271c1aec4745,
    0x05db161403edcca7,
    0x8281dfb0ec53c0b3,
    0x05c4955c81fa8d05,
    0x455bd4175dff3991,
    0x3d44ed5cdff8fbb3,
    0xe70f2c55381adc52,
    0xf507464c0fe8d029,
    0x476d7cadfcff85dd,
    0x7cdfef026289726d,
    0xc395945802d1229c,
    0xb2f3bb836d27c039,
    0xe08ab33bff0613a7,
    0xf81b30857e7b507e,
    0x8ed2f9be8d2d2bb0,
    0x69cde74c80b22761,
    0xc6bb3324b0bcdcdd,
    0x64547e447dfe488f,
    0x5a66b006217068cd,
    0x7dccf43ec8b42d27,
    0xe26a5acae0690577,
    0xc52ffe876aac4ce8,
    0x996a9d7d1a1cb91f,
    0xdcf5dedf82cc16eb,
    0x6d2744b8f1f0fec9,
    0x3dd4d89678c2213d,
    0x8281dfb0ec53c0b3,
    0x8e6d666ad1b38901,
    0x7330e8aa2d77bbd2,
    0x4db5aefc01c9a6f3,
    0xbe181f5c8076d977,
    0x854480c06758ab25,
    0xef55716f6004b1ab,
    0x1bb9d8a29d271d9d,
    0xb46c0bf34b0b1a85,
    0x04fdd7931062666d,
    0xb2f3bb836d27c039,
    0x9c70c821153f4895,
    0x1d3c6b78dde934dd,
    0x60fdc53c8c8e9b7d,
    0xe62b0d65043182fb,
    0x2181e910c7cafa0c,
    0x058af0434a8ee32d,
    0x959d8fd8e0785fd1,
    0xb2c47e6cddb352dd,
    0x1479d44e3fe30b83,
    0x4c6fdd6c8609c79b,
    0xf6d95619f738035b,
    0xa7743528e12a36db,
    0x3bf67f8cf78e5cf1,
    0x3a603f219fc98fbd,
    0x2769eaec5de6ff5f,
    0x69254a4c5dd97622,
    0xfffb31146d30e57b,
    0x851d7396c496512d,
    0x637074b3f98b8edd,
    0xe17a020c39ba3d1b,
    0x58da4ebd0f15d886,
    0xcc84ceea82504af5,
    0x315b7d08cc758265,
    0x0364645fc8042f8d,
    0xd3565e3e3c033e85,
    0x38efaadd54eb519f,
    0x7dccf43ec8b42d27,
    0x5002e9980fc47191,
    0x5f6afd8083ee26d3,
    0x6b7e422839f68ce5,
    0x64547e447dfe488f,
    0x810d3b34d443a009,
    0xa8da837cf9c3bfe1,
    0x3f0e9964259ed876,
    0xc453086c9198c5c3,
    0xa84694666505c3f3,
    0xdee649e3c4b52135,
    0xd0a5bbaaccd86f2a,
    0x1682c1ecf1c6af07,
    0x02668024865ec18d,
    0xf545d4da36f83b01,
    0x45a9c5155973cf93,
    0xa67a68b9794c44c3,
    0xd41d5f95c0364ab9,
    0x03309cbba641618b,
    0x061e977566122c56,
    0xc6007190cf43197a,
    0x202fc46bd964d26d,
    0xea63ae8519db7c7c,
    0xa61b6660c9ea12ac,
    0xc395945802d1229c,
    0x16f5a506f379ab7b,
    0xf42d52e1c14ce670,
    0x1d057a119a762813,
    0xd51cce177f482992,
    0xf79c41042866c505,
    0x0923d0b4f16070fa,
    0xea2d0b77a84b331d,
    0x3156311c72dbf79f,
    0x69d2f2abc7804512,
    0xad1a75b90d468327,
    0xcd4da689d2948370,
    0x70f0a8ff4ca0aca1,
    0x5fb48f8a8f7afe78,
    0x828cfdf4d5c2c08d,
    0x3ad41c8c222b91bd,
    0x70f0a8ff4ca0aca1,
    0x0f3d7b2c09baf7be,
    0x21485ec6b6954e7d,
    0x7f5d4d73a55f70b0,
    0x464bbd2799ed8075,
    0x8b760551394b8b00,
    0x8cfc4f9b8dcbd5c0,
    0x66ac50195364b201,
    0xa4d042d608392acd,
    0xec57ba55475f1610,
    0xf59f8fa18050d504,
    0x24ef92e0ee69bb3b,
    0x0cbb9b18b93288d7,
    0xc7beb9a67992fc1c,
    0xe4e4455b62ba017e,
    0xe39e790417a943a3,
    0x56b18d799c0e7904,
    0x5fe6400e33d2b15b,
    0x3a1dc42d4a7f97de,
    0x87f92a0f56f8b20b,
    0x32b1d76ac1180415,
    0xe488d24c6fee9ab8,
    0xba63b4dd060de0b4,
    0x72f7d65f02a108c3,
    0x57bcadf5a4c803a9,
    0xc0234b8f43b0a79c,
    0x84e57d7526c8193d,
    0xf9d0b237f04c978e,
    0xaf565ac76bd5e2e0,
    0xd311d89b40f7d6de,
    0xc790ea1b9e1fabe1,
    0xcb09d6a430c44682,
    0x7256a5bc23c395bb,
    0x2e16917aa981b571,
    0xb23e8474129cb265,
    0x8264f60927d6a6ca,
    0x2676dc1ffd92de33,
    0xc48783f8df1a9efe,
    0xe9d59220a989f3a9,
    0x5ac0823618a68b34,
    0x3db2a18c2ce4c1cf,
    0xa7dcaa5934f4a323,
    0x4b05d356ef8c551e,
    0x5dd6b9e95b2f2e18,
    0x710f8e05b92c9814,
    0xc70c88601c972d19,
    0x3d8bc3ee900c4ff9,
    0xa57bcb17809c30d9,
    0x560bf9cbee0ea46a,
    0x2427f0c91214d07b,
    0x8f540b4cb7194e14,
    0x92fedff398ef611f,
    0xce3936cdab34079a,
    0x894fdeb7f57a8a83,
    0x70f0a8ff4ca0aca1,
    0x19241089e3051a10,
    0x0484322fa875c0a8,
    0xda54bac39fd08a0e,
    0xf53c18588318ccc2,
    0x8971fb40b3cfe815,
    0xac4ee5780536d939,
    0xe026661c412a4de4,
    0xef8e2db7b2f979bc,
    0xabde0aebdf92cd71,
    0x55e8779980264156,
    0xc2f6f9c5a2bc9479,
    0x895798cd993bfd0b,
    0x72be2adcfed38f70,
    0x39826543517612fc,
    0x25bcc3af82488847,
    0x6789ef0f765fa8d4,
    0x4f0f55d366fb93f7,
    0xa3866f93c836f437,
    0xf91dd64ee779b4b4,
    0xfb9f11061ab33c55,
    0xc9be1792b03ce052,
    0xfdb75d0a02abfa8b,
    0x16297ffd2ff79a9e,
    0x8a59989f08ba20b5,
    0x71a21b399afd401a,
    0x86c9c45e74c9593b,
    0x4d6d0f3e37e6d2cc,
    0x7d6db070b1135aff,
    0xced8cd3ba76991ec,
    0x56ce1c24d6d08d94,
    0x03526610edb4c510,
    0x2e0b9cfc06283ce4,
    0x12829c8986f3c24c,
    0xa92548c7269bbfb3,
    0x8a139f4d4c094eba,
    0x90cea0ff45b98400,
    0xce1c7ddac3d11bb5,
    0x3c9471fb3084d11c,
    0x4e6ce490092f8059,
    0x9e727403493b0456,
    0x70f0a8ff4ca0aca1,
    0x73b16d2518911a72,
    0xce180ef23f09b3da,
    0x56b18d799c0e7904,
    0x1a69e355e0f3b6a1,
    0x5bc950f8277e23be,
    0x8dddda8cf8c012e7,
    0x0ff04fbd58cf29a0,
    0xdc9fc4cca0e8c50f,
    0xc425b5d4102d002a,
    0x052902ea2e0d8141,
    0x86d4e9da1c5a768e,
    0x1165b3f6161c0792,
    0x87684a4f2e09629e,
    0x274f290979e312eb,
    0xa279b44a2ac195fc,
    0x7d83004ff8f58ec9,
    0x2c195e4657bc1df4,
    0x632afdb80480e2bf,
    0x260421c79f02d956,
    0xcf3390b084b11151,
    0x70f0a8ff4ca0aca1,
    0xf1bdffb7ccb144bd,
    0xc395945802d1229c,
    0x56b18d799c0e7904,
    0xae3ddbf74eb3e00a,
    0xd5b974c81b7f0783,
    0x5570ef5e1a1b8d20,
    0x4c1b08d7bd873c94,
    0x4cc3249ef5ac056c,
    0x42a059d7e958be9c,
    0x72774f07f92f8d90,
    0xc395945802d1229c,
    0xf3be74668c31f27e,
    0x50a30d2c37723b9b,
    0x76a74f757a20d157,
    0xb9566f179c436071,
    0x904d47807b50c67a,
    0x55fadc043ca76b0a,
    0x193d20c0fe7f9140,
    0x9780919ca8411efa,
    0xe017bc5de7fa6411,
    0xf15792d1b3e74033,
    0x232a8fe741e6b92b,
    0x85efc477a7fc785f,
    0x0cba34c63afd372e,
    0x1f892382fb6224d9,
    0x7dcc1ffb4aa5d089,
    0x9cc8fe4cc642467d,
    0xb8e0f35bfb465633,
    0xc9db325da19156f1,
    0xd544dc77cd0e3a22,
    0x0b5c93396410dc6a,
    0xf2a51b902a2cb275,
    0xa68b2271f0ea09f9,
    0x2111f1f3665ac3bd,
    0x56b18d799c0e7904,
    0xcba7b9bf8fd89229,
    0xcbaa1e9ba11498de,
    0xbd73361bd62c0519,
    0x0840be3b56959dea,
    0x901b3e542bec02ec,
    0xc66acb4b01f96dfa,
    0x70f0a8ff4ca0aca1,
    0xbdffc5be95f4795f,
    0x00203244ee590293,
    0xd89e289cdac5feef,
    0x1e4d348fad13e95c,
    0xdf2d879e992afc61,
    0x70f0a8ff4ca0aca1,
    0x5890a3996c3e1498,
    0x247ed1c73c3dcac9,
    0x41750c336d819890,
    0xfa719a3993456372,
    0x0538483eaf1afb8c,
    0x87e47051fb89f73c,
    0x56b18d799c0e7904,
    0x09975039a5cca4b9,
    0x223bd7f68e718f93,
    0x56b18d799c0e7904,
    0x73fe8f9c11928adb,
    0x0ead6ac352e37527,
    0x658e8af76ee70e37,
];

#[test]
fn builder_output_equals_the_old_builders() {
    let shapes = all();
    let digests: Vec<u64> = shapes.iter().map(|(_, t)| fnv(&dump(t))).collect();
    if std::env::var_os("SCHEDLAB_PRINT_DIGESTS").is_some() {
        for chunk in digests.chunks(4) {
            let line: Vec<String> = chunk.iter().map(|d| format!("0x{d:016x}")).collect();
            println!("    {},", line.join(", "));
        }
    }
    assert_eq!(digests.len(), EXPECTED.len(), "shape list changed");
    for (((name, _), got), want) in shapes.iter().zip(&digests).zip(EXPECTED) {
        assert_eq!(
            got, want,
            "{name}: the built domains differ from the old builder's"
        );
    }
}
