//! The studio's look: one restrained palette for the chrome, the colours of data (one categorical palette for
//! series and the colours that mean one thing, [`data`]), spacing tokens and the slot accent colours. Every colour
//! the studio paints is defined here.

use egui::{Color32, CornerRadius, Stroke};
use serde::{Deserialize, Serialize};

use crate::engine::component::Slot;

/// The theme a person picked (persisted).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ThemeChoice {
    /// Dark background, light text (the default).
    #[default]
    Dark,
    /// Light background, dark text.
    Light,
}

impl ThemeChoice {
    /// Label shown in the View menu.
    pub fn label(self) -> &'static str {
        match self {
            Self::Dark => "Dark",
            Self::Light => "Light",
        }
    }
}

/// Spacing between panel sections.
pub const SECTION_GAP: f32 = 10.0;
/// Inner margin of panels.
pub const PANEL_MARGIN: i8 = 10;
/// Corner radius of blocks and cards.
pub const BLOCK_RADIUS: u8 = 6;
/// Width of a block's border.
pub const BLOCK_STROKE: f32 = 1.0;
/// Width of a selected block's border.
pub const BLOCK_STROKE_SELECTED: f32 = 2.0;

/// The colours of data, the same in both themes (they sit on plots and code, not on the chrome): one categorical
/// palette for things told apart by colour alone (runs compared, models, islands, a leaderboard's cards), and the
/// colours that mean one thing wherever they appear.
pub mod data {
    use egui::Color32;

    /// The categorical palette: the `i`th series is [`series`]`(i)`.
    pub const SERIES: [Color32; 8] = [
        Color32::from_rgb(90, 160, 230),
        Color32::from_rgb(240, 180, 60),
        Color32::from_rgb(120, 200, 120),
        Color32::from_rgb(225, 95, 85),
        Color32::from_rgb(175, 125, 225),
        Color32::from_rgb(80, 200, 200),
        Color32::from_rgb(230, 130, 190),
        Color32::from_rgb(170, 170, 170),
    ];

    /// The colour of series `i` (the palette repeats past its length).
    pub fn series(i: usize) -> Color32 {
        SERIES[i % SERIES.len()]
    }

    /// A valid genome, a gain, a check that passed.
    pub const GOOD: Color32 = Color32::from_rgb(95, 190, 110);
    /// An invalid genome, a loss, a refusal.
    pub const BAD: Color32 = Color32::from_rgb(230, 95, 85);
    /// A valid genome's point.
    pub const VALID: Color32 = SERIES[0];
    /// A genome the novelty gate or a rule rejected before evaluation.
    pub const REJECTED: Color32 = Color32::from_rgb(200, 140, 230);
    /// The best genome, the best-so-far curve, a front.
    pub const BEST: Color32 = SERIES[1];
    /// The selected genome's marker.
    pub const SELECTED: Color32 = Color32::from_rgb(250, 250, 250);
    /// An inspiration link.
    pub const INSPIRATION: Color32 = Color32::from_rgb(120, 200, 200);
    /// A thing in no series (a genome on no island when nodes are coloured by island).
    pub const NO_GROUP: Color32 = Color32::from_rgb(200, 200, 200);
    /// A genome a person wrote.
    pub const PERSON: Color32 = Color32::from_rgb(80, 210, 160);
    /// A hunk header, a tool call: structure inside text.
    pub const STRUCTURE: Color32 = Color32::from_rgb(110, 160, 230);
    /// Lines added and removed, as text colour.
    pub const ADDED: Color32 = Color32::from_rgb(90, 180, 100);
    pub const REMOVED: Color32 = Color32::from_rgb(210, 90, 90);
    /// Lines added and removed, as a background behind code.
    pub const ADDED_BG: Color32 = Color32::from_rgba_premultiplied(30, 100, 40, 90);
    pub const REMOVED_BG: Color32 = Color32::from_rgba_premultiplied(120, 30, 30, 90);
    /// The badge of a run on the offline model.
    pub const OFFLINE_BADGE: Color32 = Color32::from_rgb(200, 150, 40);
    /// The badge of a run whose candidates run without the sandbox.
    pub const UNSANDBOXED_BADGE: Color32 = Color32::from_rgb(190, 40, 40);

    /// A score in `0..=1` as a colour (dark blue → teal → green → yellow).
    pub fn score(t: f32) -> Color32 {
        const STOPS: [(f32, [f32; 3]); 4] = [
            (0.0, [68.0, 60.0, 140.0]),
            (0.4, [40.0, 140.0, 150.0]),
            (0.75, [90.0, 200.0, 100.0]),
            (1.0, [250.0, 225.0, 40.0]),
        ];
        let t = if t.is_finite() {
            t.clamp(0.0, 1.0)
        } else {
            0.0
        };
        let mut prev = STOPS[0];
        for stop in STOPS {
            if t <= stop.0 {
                let span = (stop.0 - prev.0).max(1e-6);
                let f = (t - prev.0) / span;
                let c = |k: usize| (prev.1[k] + (stop.1[k] - prev.1[k]) * f).round() as u8;
                return Color32::from_rgb(c(0), c(1), c(2));
            }
            prev = stop;
        }
        Color32::from_rgb(250, 225, 40)
    }
}

/// Colours derived from the current theme, for painting the block editor.
#[derive(Clone, Copy, Debug)]
pub struct Palette {
    /// Canvas background behind the blocks.
    pub canvas: Color32,
    /// Block fill.
    pub block: Color32,
    /// Block fill while hovered or a drop target.
    pub block_hover: Color32,
    /// Border of an unselected block.
    pub border: Color32,
    /// Main text.
    pub text: Color32,
    /// Secondary text (kinds, parameter values).
    pub weak: Color32,
    /// Arrows of the loop.
    pub arrow: Color32,
    /// Errors (invalid values, broken blocks).
    pub error: Color32,
    /// Warnings and the unsaved marker.
    pub warn: Color32,
    /// Success (valid card).
    pub ok: Color32,
    /// Accent for selection and focus.
    pub accent: Color32,
}

impl Palette {
    /// The palette of a theme.
    pub fn of(choice: ThemeChoice) -> Self {
        match choice {
            ThemeChoice::Dark => Self {
                canvas: Color32::from_rgb(0x16, 0x18, 0x1c),
                block: Color32::from_rgb(0x22, 0x25, 0x2b),
                block_hover: Color32::from_rgb(0x2a, 0x2e, 0x36),
                border: Color32::from_rgb(0x3a, 0x3f, 0x48),
                text: Color32::from_rgb(0xe4, 0xe6, 0xea),
                weak: Color32::from_rgb(0x9a, 0xa0, 0xaa),
                arrow: Color32::from_rgb(0x6b, 0x72, 0x7e),
                error: Color32::from_rgb(0xf0, 0x6a, 0x6a),
                warn: Color32::from_rgb(0xe8, 0xb3, 0x4b),
                ok: Color32::from_rgb(0x6c, 0xc4, 0x8a),
                accent: Color32::from_rgb(0x5a, 0x9c, 0xf0),
            },
            ThemeChoice::Light => Self {
                canvas: Color32::from_rgb(0xf3, 0xf4, 0xf6),
                block: Color32::from_rgb(0xff, 0xff, 0xff),
                block_hover: Color32::from_rgb(0xea, 0xf1, 0xfb),
                border: Color32::from_rgb(0xc9, 0xce, 0xd6),
                text: Color32::from_rgb(0x1d, 0x21, 0x27),
                weak: Color32::from_rgb(0x5b, 0x62, 0x6d),
                arrow: Color32::from_rgb(0x8a, 0x91, 0x9c),
                error: Color32::from_rgb(0xc4, 0x2b, 0x2b),
                warn: Color32::from_rgb(0xa8, 0x6a, 0x00),
                ok: Color32::from_rgb(0x1f, 0x8a, 0x4c),
                accent: Color32::from_rgb(0x1f, 0x6f, 0xd6),
            },
        }
    }

    /// Accent colour of a slot (the stripe at the top of its block).
    pub fn slot(self, slot: Slot) -> Color32 {
        match slot {
            Slot::Population => Color32::from_rgb(0x4f, 0x9d, 0x8f),
            Slot::SelectionPolicy => Color32::from_rgb(0x5a, 0x8c, 0xd6),
            Slot::PromptBuilder => Color32::from_rgb(0x8e, 0x7c, 0xc9),
            Slot::Proposer => Color32::from_rgb(0xc9, 0x85, 0x4f),
            Slot::Evaluator => Color32::from_rgb(0xc0, 0x5f, 0x77),
            Slot::Memory => Color32::from_rgb(0x8a, 0x95, 0x5a),
        }
    }

    /// Stroke of a block border.
    pub fn block_stroke(self, selected: bool, broken: bool) -> Stroke {
        if broken {
            Stroke::new(BLOCK_STROKE_SELECTED, self.error)
        } else if selected {
            Stroke::new(BLOCK_STROKE_SELECTED, self.accent)
        } else {
            Stroke::new(BLOCK_STROKE, self.border)
        }
    }
}

/// Corner radius of blocks.
pub fn block_radius() -> CornerRadius {
    CornerRadius::same(BLOCK_RADIUS)
}

/// Apply a theme to the context: egui's base visuals plus our spacing and
/// error colour, so every widget agrees with the painted canvas.
pub fn apply(ctx: &egui::Context, choice: ThemeChoice) {
    let palette = Palette::of(choice);
    let mut visuals = match choice {
        ThemeChoice::Dark => egui::Visuals::dark(),
        ThemeChoice::Light => egui::Visuals::light(),
    };
    visuals.error_fg_color = palette.error;
    visuals.warn_fg_color = palette.warn;
    visuals.selection.bg_fill = palette.accent.gamma_multiply(0.55);
    visuals.hyperlink_color = palette.accent;
    ctx.set_visuals(visuals);
    ctx.all_styles_mut(|style| {
        style.spacing.item_spacing = egui::vec2(8.0, 6.0);
        style.spacing.button_padding = egui::vec2(8.0, 3.0);
        style.spacing.interact_size.y = 22.0;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn palettes_differ_and_text_contrasts_with_blocks() {
        for choice in [ThemeChoice::Dark, ThemeChoice::Light] {
            let p = Palette::of(choice);
            let lum = |c: Color32| {
                0.2126 * f32::from(c.r()) + 0.7152 * f32::from(c.g()) + 0.0722 * f32::from(c.b())
            };
            assert!((lum(p.text) - lum(p.block)).abs() > 120.0, "{choice:?}");
            assert!((lum(p.weak) - lum(p.block)).abs() > 60.0, "{choice:?}");
        }
        assert_ne!(
            Palette::of(ThemeChoice::Dark).canvas,
            Palette::of(ThemeChoice::Light).canvas
        );
    }

    /// The hub site's six-block SVG (engine, no egui) repeats the light
    /// palette and the slot colours: they must stay the same.
    #[test]
    fn the_hub_svg_uses_the_light_palette() {
        use crate::engine::hub::site::blocks;
        let hex = |c: Color32| format!("#{:02x}{:02x}{:02x}", c.r(), c.g(), c.b());
        let p = Palette::of(ThemeChoice::Light);
        assert_eq!(hex(p.canvas), blocks::CANVAS);
        assert_eq!(hex(p.block), blocks::BLOCK);
        assert_eq!(hex(p.border), blocks::BORDER);
        assert_eq!(hex(p.text), blocks::TEXT);
        assert_eq!(hex(p.weak), blocks::WEAK);
        assert_eq!(hex(p.arrow), blocks::ARROW);
        assert_eq!(hex(p.error), blocks::ERROR);
        for slot in Slot::ALL {
            assert_eq!(hex(p.slot(slot)), blocks::slot_colour(slot), "{slot:?}");
        }
    }
}
