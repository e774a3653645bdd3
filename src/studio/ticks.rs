//! The y axis of the plots of scores (a run's fitness, the leaderboard's
//! curves, compared runs): ticks at 1, 2 and 5 times a power of ten, each
//! labelled with the decimals its step needs.

/// `plot` with this y axis.
pub fn value_axis(plot: egui_plot::Plot<'_>) -> egui_plot::Plot<'_> {
    plot.y_grid_spacer(egui_plot::uniform_grid_spacer(nice_steps))
        .y_axis_formatter(|mark, _| tick_label(mark))
}

/// A tick's value with the decimals its step needs: one for a step of 0.5
/// or 0.2 (egui_plot's own label rounds the decimals, so a tick at 0.5 on
/// a step of 0.5 read "0").
pub fn tick_label(mark: egui_plot::GridMark) -> String {
    let decimals = (-mark.step_size.abs().log10().floor()).clamp(0.0, 12.0) as usize;
    egui::emath::format_with_decimals_in_range(mark.value, decimals..=decimals)
}

/// Grid steps of 1, 2 and 5 times a power of ten, the finest at least
/// the plot's least step. egui_plot's own steps go by tens: a short plot of
/// a narrow range (0.4 to 0.85 in 65 points) then had no tick far enough
/// from the next to be labelled, and showed no y value at all.
pub fn nice_steps(input: egui_plot::GridInput) -> [f64; 3] {
    let least = input.base_step_size.abs().max(f64::MIN_POSITIVE);
    let mut power = 10f64.powf(least.log10().floor());
    let mut steps = Vec::with_capacity(3);
    'outer: loop {
        for m in [1.0, 2.0, 5.0] {
            let step = m * power;
            if step >= least * (1.0 - 1e-9) {
                steps.push(step);
                if steps.len() == 3 {
                    break 'outer;
                }
            }
        }
        power *= 10.0;
    }
    [steps[0], steps[1], steps[2]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_has_the_decimals_its_step_needs() {
        let label =
            |value: f64, step_size: f64| tick_label(egui_plot::GridMark { value, step_size });
        assert_eq!(label(0.5, 0.5), "0.5");
        assert_eq!(label(0.4, 0.2), "0.4");
        assert_eq!(label(0.05, 0.05), "0.05");
        assert_eq!(label(20.0, 10.0), "20");
        assert_eq!(label(1.0, 1.0), "1");
    }

    #[test]
    fn grid_steps_go_by_one_two_five() {
        let steps = |least: f64| {
            nice_steps(egui_plot::GridInput {
                bounds: (0.0, 1.0),
                base_step_size: least,
            })
        };
        assert_eq!(steps(0.055), [0.1, 0.2, 0.5]);
        assert_eq!(steps(0.1), [0.1, 0.2, 0.5]);
        assert_eq!(steps(0.3), [0.5, 1.0, 2.0]);
        assert_eq!(steps(7.0), [10.0, 20.0, 50.0]);
        // nothing a degenerate input can make loop for ever or fail
        assert_eq!(steps(0.0).len(), 3);
        assert_eq!(steps(f64::NAN).len(), 3);
        assert!(steps(f64::INFINITY)[0].is_infinite());
    }
}
