//! The comparison as an SVG bar chart (plotters): for every op (and metric)
//! the baseline's and the variant's mean side by side, with ±1 sample
//! standard deviation whiskers and every sample as a dot.

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::Table;
use super::stats::{self, Better};

/// What the bars along x are: the sweep key; without a sweep, the metrics
/// when there are several, else the two configurations.
fn x_axis(t: &Table) -> String {
    let several_metrics = t.cells.iter().any(|(_, m, _)| !m.is_empty());
    match (t.axis.as_str(), several_metrics) {
        ("configuration", true) => "metric".to_string(),
        (a, true) => format!("{a} / metric"),
        (a, false) => a.to_string(),
    }
}

/// The y axis: the unit, and for times the clock they come from; a count
/// (messages, migrations, transactions) names the backend that made it.
fn y_axis(t: &Table) -> String {
    let timed =
        t.unit.contains("seconds") || t.unit.contains("microseconds") || t.unit.contains("/s");
    if timed {
        format!("{}, {} clock", t.unit, t.clock)
    } else {
        let backend = match t.clock {
            "sim" => "simulator",
            "icount" => "QEMU icount",
            _ => "QEMU",
        };
        format!("{} ({backend} runs)", t.unit)
    }
}

/// Renders `t` as an SVG document.
pub fn svg(t: &Table) -> Result<String> {
    let mut out = String::new();
    {
        let n = t.cells.len().max(1);
        let width = (160 + 140 * n as u32).max(480);
        let root = SVGBackend::with_string(&mut out, (width, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| anyhow!("plot: {e}"))?;
        let ymax = t
            .cells
            .iter()
            .flat_map(|(_, _, s)| s.baseline.iter().chain(&s.variant))
            .copied()
            .fold(0.0f64, f64::max)
            // Headroom above the tallest sample for the legend, which
            // would otherwise sit on the bars.
            * 1.4;
        let better = match t.better {
            Better::Lower => "lower is better",
            Better::Higher => "higher is better",
        };
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("{} ({better}; {})", t.title, super::clock_meaning(t.clock)),
                ("sans-serif", 16),
            )
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(0f64..n as f64, 0f64..ymax.max(1e-9))
            .map_err(|e| anyhow!("plot: {e}"))?;
        let labels: Vec<String> = t
            .cells
            .iter()
            .map(|(op, m, _)| match (op.as_str(), m.is_empty()) {
                ("-", false) => m.clone(),
                ("-", true) => "baseline vs variant".to_string(),
                (_, false) => format!("{op}/{m}"),
                _ => op.clone(),
            })
            .collect();
        chart
            .configure_mesh()
            .disable_x_mesh()
            // The op labels are drawn below, one under each pair of bars.
            .x_labels(0)
            .x_desc(format!("{} (machine: {})", x_axis(t), t.machine))
            .y_desc(y_axis(t))
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        fn base(s: &super::Samples) -> &Vec<f64> {
            &s.baseline
        }
        fn var(s: &super::Samples) -> &Vec<f64> {
            &s.variant
        }
        type Pick = fn(&super::Samples) -> &Vec<f64>;
        let series: [(f64, &String, RGBAColor, Pick); 2] = [
            (0.15, &t.baseline_name, BLUE.mix(0.6), base),
            (0.55, &t.variant_name, RED.mix(0.6), var),
        ];
        for (offset, name, color, pick) in series {
            let bars = t.cells.iter().enumerate().map(move |(i, (_, _, s))| {
                let m = stats::amean(pick(s));
                let x0 = i as f64 + offset;
                Rectangle::new([(x0, 0.0), (x0 + 0.3, m)], color.filled())
            });
            chart
                .draw_series(bars)
                .map_err(|e| anyhow!("plot: {e}"))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
            let whiskers = t.cells.iter().enumerate().map(move |(i, (_, _, s))| {
                let v = pick(s);
                let (m, sd) = (stats::amean(v), stats::stddev(v));
                let x = i as f64 + offset + 0.15;
                PathElement::new(
                    vec![(x, (m - sd).max(0.0)), (x, m + sd)],
                    BLACK.stroke_width(2),
                )
            });
            chart
                .draw_series(whiskers)
                .map_err(|e| anyhow!("plot: {e}"))?;
            let dots = t.cells.iter().enumerate().flat_map(move |(i, (_, _, s))| {
                let x = i as f64 + offset + 0.15;
                pick(s)
                    .iter()
                    .map(move |&v| Circle::new((x, v), 3, BLACK.filled()))
            });
            chart.draw_series(dots).map_err(|e| anyhow!("plot: {e}"))?;
        }
        // Each op's label centred under its pair of bars (plotters' own x
        // labels fall on round numbers, not on the bars).
        for (i, label) in labels.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
            root.draw(&Text::new(
                label.clone(),
                (px, py + 6),
                TextStyle::from(("sans-serif", 13).into_font())
                    .pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(|e| anyhow!("plot: {e}"))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(|e| anyhow!("plot: {e}"))?;
        root.present().map_err(|e| anyhow!("plot: {e}"))?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{Samples, Table};
    use super::*;

    #[test]
    fn draws_both_configurations_for_every_op() {
        let t = Table {
            title: "hackbench-thread-pipes".into(),
            unit: "time in seconds",
            clock: "icount",
            axis: "groups".into(),
            machine: "2s8-nosmt: 16 CPUs".into(),
            better: Better::Lower,
            decimals: 4,
            baseline_name: "fair cfs".into(),
            variant_name: "fair cfs WA_SYNC".into(),
            cells: vec![
                (
                    "1".into(),
                    String::new(),
                    Samples {
                        baseline: vec![1.0, 1.2],
                        variant: vec![0.8, 0.9],
                    },
                ),
                (
                    "4".into(),
                    String::new(),
                    Samples {
                        baseline: vec![2.0, 2.4],
                        variant: vec![2.1, 2.2],
                    },
                ),
            ],
        };
        let svg = svg(&t).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..80.min(svg.len())]);
        assert!(svg.contains("hackbench-thread-pipes"));
        assert!(svg.contains("fair cfs WA_SYNC"));
        // The axes say what the ops are and which clock the values are.
        assert!(svg.contains("groups"), "x axis names the sweep key");
        assert!(
            svg.contains("2s8-nosmt: 16 CPUs"),
            "x axis names the machine"
        );
        assert!(svg.contains("time in seconds, icount clock"));
        assert!(svg.contains("summed instructions"));
        // 4 bars + 4 whiskers + 8 sample dots at least.
        assert!(svg.matches("<rect").count() >= 4);
        assert!(svg.matches("<circle").count() >= 8);
    }

    #[test]
    fn axes_say_what_counts_and_metrics_are() {
        let mut t = Table {
            title: "hackbench-thread-pipes".into(),
            unit: "migrations in the timed interval",
            clock: "sim",
            axis: "configuration".into(),
            machine: "8 CPUs".into(),
            better: Better::Lower,
            decimals: 0,
            baseline_name: "a".into(),
            variant_name: "b".into(),
            cells: vec![(
                "-".into(),
                "cross-MC".into(),
                Samples {
                    baseline: vec![1.0],
                    variant: vec![2.0],
                },
            )],
        };
        assert_eq!(x_axis(&t), "metric");
        assert_eq!(
            y_axis(&t),
            "migrations in the timed interval (simulator runs)"
        );
        t.axis = "groups".into();
        assert_eq!(x_axis(&t), "groups / metric");
        t.unit = "time in seconds";
        t.cells[0].1 = String::new();
        assert_eq!(x_axis(&t), "groups");
        assert_eq!(y_axis(&t), "time in seconds, sim clock");
    }
}
