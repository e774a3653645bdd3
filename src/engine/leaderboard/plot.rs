//! The leaderboard's plot: each card's mean best-so-far per iteration with its
//! 95 % bootstrap band, as `leaderboard.svg` and `leaderboard.png`; a suite's,
//! each card's score over the suite (the mean normalised best so far) with its
//! band over seeds, as `suite.svg` and `suite.png`.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use super::report::Leaderboard;
use super::stats::Estimate;
use super::suite_report::SuiteLeaderboard;

/// The plot's size in pixels.
pub const SIZE: (u32, u32) = (960, 600);

/// The PNG's text needs a font: egui's default one, handed to plotters once.
fn register_font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            epaint_default_fonts::UBUNTU_LIGHT,
        )
        .map_err(|_| "the plot's font cannot be read".to_owned())
    })
    .clone()
}

/// Draw `lb` into `leaderboard.svg` and `leaderboard.png` in `out`; returns
/// the paths written.
pub fn write_plots(out: &Path, lb: &Leaderboard) -> Result<Vec<PathBuf>, String> {
    let chart = Chart {
        title: format!(
            "{}: mean best-so-far with 95 % CI ({} seeds, {})",
            lb.task,
            lb.seeds.len(),
            lb.model.split(':').next().unwrap_or_default()
        ),
        y_desc: "best score so far",
        iterations: lb.iterations,
        series: lb
            .cards
            .iter()
            .map(|c| (label(&c.card, c.capped), c.curve.as_slice()))
            .collect(),
    };
    write_chart(out, "leaderboard", &chart)
}

/// Draw the suite's scores into `suite.svg` and `suite.png` in `out`;
/// returns the paths written.
pub fn write_suite_plots(out: &Path, sl: &SuiteLeaderboard) -> Result<Vec<PathBuf>, String> {
    let chart = Chart {
        title: format!(
            "{} ({} tasks): mean normalised best-so-far with 95 % CI ({} seeds, {})",
            sl.suite,
            sl.tasks.len(),
            sl.seeds.len(),
            sl.model.split(':').next().unwrap_or_default()
        ),
        y_desc: "best so far / best known (mean over tasks)",
        iterations: sl.iterations,
        series: sl
            .cards
            .iter()
            .map(|c| (label(&c.card, c.capped), c.curve.as_slice()))
            .collect(),
    };
    write_chart(out, "suite", &chart)
}

fn label(card: &str, capped: bool) -> String {
    if capped {
        format!("{card} (capped)")
    } else {
        card.to_owned()
    }
}

/// What a plot draws: one banded curve per card.
struct Chart<'a> {
    title: String,
    y_desc: &'static str,
    iterations: u64,
    series: Vec<(String, &'a [Option<Estimate>])>,
}

fn write_chart(out: &Path, stem: &str, chart: &Chart<'_>) -> Result<Vec<PathBuf>, String> {
    register_font()?;
    let svg = out.join(format!("{stem}.svg"));
    draw(SVGBackend::new(&svg, SIZE).into_drawing_area(), chart)
        .map_err(|e| format!("{}: {e}", svg.display()))?;
    let png = out.join(format!("{stem}.png"));
    draw(BitMapBackend::new(&png, SIZE).into_drawing_area(), chart)
        .map_err(|e| format!("{}: {e}", png.display()))?;
    Ok(vec![svg, png])
}

/// The y range every band fits in, with a margin.
fn y_range(chart: &Chart<'_>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for e in chart.series.iter().flat_map(|(_, c)| c.iter().flatten()) {
        if e.ci_low.is_finite() && e.ci_high.is_finite() {
            lo = lo.min(e.ci_low);
            hi = hi.max(e.ci_high);
        }
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(1e-6);
    (lo - pad, hi + pad)
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, what: &Chart<'_>) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let (lo, hi) = y_range(what);
    let mut chart = ChartBuilder::on(&root)
        .caption(&what.title, ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..what.iterations.max(1) as f64, lo..hi)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("iteration")
        .y_desc(what.y_desc)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(err)?;
    for (i, (name, curve)) in what.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let points: Vec<(f64, f64, f64, f64)> = curve
            .iter()
            .enumerate()
            .filter_map(|(x, e)| e.map(|e| (x as f64, e.mean, e.ci_low, e.ci_high)))
            .filter(|(_, m, l, h)| m.is_finite() && l.is_finite() && h.is_finite())
            .collect();
        let mut band: Vec<(f64, f64)> = points.iter().map(|p| (p.0, p.3)).collect();
        band.extend(points.iter().rev().map(|p| (p.0, p.2)));
        chart
            .draw_series(std::iter::once(Polygon::new(
                band,
                color.mix(0.18).filled(),
            )))
            .map_err(err)?;
        chart
            .draw_series(LineSeries::new(
                points.iter().map(|p| (p.0, p.1)),
                color.stroke_width(2),
            ))
            .map_err(err)?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::LowerRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}
