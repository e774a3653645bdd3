//! The six blocks of a card as an SVG, laid out and coloured as the studio's
//! canvas draws them (`studio/editor/canvas.rs`, light palette of
//! `studio/theme.rs`): the loop Population → SelectionPolicy → PromptBuilder
//! → Proposer → Evaluator with the return arrow below, Memory above with its
//! read and write arrows; each block shows its slot, implementation, kind and
//! first three parameters (set ones in the text colour, defaults dimmed).
//! The geometry is the studio's ([`crate::engine::card::diagram`]); the
//! engine has no egui, so the colours are repeated here and a studio test
//! checks them against the theme.

use std::fmt::Write as _;

use super::html::esc;
use crate::engine::card::Card;
use crate::engine::card::diagram::{
    ARROW_TIP, Arrow, BLOCK_H, Box2, Diagram, KEY_PARAMS, LOOP, LabelSide, split_type_name,
};
use crate::engine::component::Slot;
use crate::engine::params::ParamValue;
use crate::engine::registry::Registry;

/// Blocks on the site are this wide, as the canvas draws them at a middling width.
const BLOCK_W: f32 = 160.0;
const RADIUS: f32 = 6.0;

/// The studio's light palette (`Palette::of(ThemeChoice::Light)`).
pub const CANVAS: &str = "#f3f4f6";
pub const BLOCK: &str = "#ffffff";
pub const BORDER: &str = "#c9ced6";
pub const TEXT: &str = "#1d2127";
pub const WEAK: &str = "#5b626d";
pub const ARROW: &str = "#8a919c";
pub const ERROR: &str = "#c42b2b";

/// The slot colours (`Palette::slot`).
pub fn slot_colour(slot: Slot) -> &'static str {
    match slot {
        Slot::Population => "#4f9d8f",
        Slot::SelectionPolicy => "#5a8cd6",
        Slot::PromptBuilder => "#8e7cc9",
        Slot::Proposer => "#c9854f",
        Slot::Evaluator => "#c05f77",
        Slot::Memory => "#8a955a",
    }
}

fn arrow(out: &mut String, arrow: &Arrow) {
    let points = arrow.points.as_slice();
    let [.., a, b] = points else {
        return;
    };
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let len = (dx * dx + dy * dy).sqrt().max(1e-3);
    let (ux, uy) = (dx / len, dy / len);
    let mut line: Vec<(f32, f32)> = points.to_vec();
    if let Some(last) = line.last_mut() {
        *last = (b.0 - ux * ARROW_TIP, b.1 - uy * ARROW_TIP);
    }
    let pts: Vec<String> = line.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
    let _ = writeln!(
        out,
        r#"<polyline points="{}" fill="none" stroke="{ARROW}" stroke-width="1.5"/>"#,
        pts.join(" ")
    );
    let (nx, ny) = (-uy, ux);
    let back = (b.0 - ux * ARROW_TIP * 1.4, b.1 - uy * ARROW_TIP * 1.4);
    let w = ARROW_TIP * 0.7;
    let _ = writeln!(
        out,
        r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{ARROW}"/>"#,
        b.0,
        b.1,
        back.0 + nx * w,
        back.1 + ny * w,
        back.0 - nx * w,
        back.1 - ny * w
    );
    if let Some(label) = arrow.label
        && let (Some(p), Some(q)) = (points.get(label.segment), points.get(label.segment + 1))
    {
        let (text, anchor, ox, oy) = match label.side {
            LabelSide::Below => (label.text, "middle", 0.0, 15.0),
            LabelSide::Left => (label.text, "end", -6.0, 4.0),
            LabelSide::Right => (label.text, "start", 6.0, 4.0),
        };
        let (mx, my) = ((p.0 + q.0) / 2.0 + ox, (p.1 + q.1) / 2.0 + oy);
        let _ = writeln!(
            out,
            r#"<text x="{mx:.1}" y="{my:.1}" text-anchor="{anchor}" font-size="11" fill="{WEAK}">{}</text>"#,
            esc(text)
        );
    }
}

/// Cut `s` to about `max` characters with an ellipsis, as the studio's
/// labels truncate.
fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let head: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{head}…")
    }
}

fn block(out: &mut String, r: Box2, slot: Slot, card: &Card, registry: &Registry) {
    let colour = slot_colour(slot);
    let _ = writeln!(
        out,
        r#"<g class="block"><title>{}: {}</title>"#,
        esc(slot.title()),
        esc(slot.role())
    );
    let _ = writeln!(
        out,
        r#"<rect x="{:.1}" y="{:.1}" width="{BLOCK_W}" height="{BLOCK_H}" rx="{RADIUS}" fill="{BLOCK}"/>"#,
        r.x, r.y
    );
    // the accent stripe on top: rounded above, square below
    let _ = writeln!(
        out,
        r#"<path d="M{x0:.1},{y4:.1} V{yr:.1} Q{x0:.1},{y0:.1} {xr:.1},{y0:.1} H{xr2:.1} Q{x1:.1},{y0:.1} {x1:.1},{yr:.1} V{y4:.1} Z" fill="{colour}"/>"#,
        x0 = r.x,
        x1 = r.right(),
        y0 = r.y,
        y4 = r.y + 4.0,
        yr = r.y + RADIUS.min(4.0),
        xr = r.x + RADIUS,
        xr2 = r.right() - RADIUS,
    );
    let _ = writeln!(
        out,
        r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" rx="{RADIUS}" fill="none" stroke="{BORDER}" stroke-width="1"/>"#,
        r.x + 0.5,
        r.y + 0.5,
        BLOCK_W - 1.0,
        BLOCK_H - 1.0
    );
    let x = r.x + 10.0;
    let mut y = r.y + 8.0 + 3.0 + 11.0;
    let mut line = |out: &mut String,
                    text: &str,
                    size: f32,
                    weight: &str,
                    fill: &str,
                    mono: bool| {
        // the kind is followed by a small gap before the parameters
        let family = if mono {
            r#" font-family="monospace""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<text x="{x:.1}" y="{y:.1}" font-size="{size}" font-weight="{weight}" fill="{fill}"{family}>{}</text>"#,
            esc(text)
        );
        y += size + if mono { 6.0 } else { 3.0 };
    };
    line(out, slot.title(), 11.0, "bold", colour, false);
    let spec = card.slot(slot);
    match registry.entry(slot, &spec.kind) {
        Ok(entry) => {
            let info = entry.info;
            for part in split_type_name(info.type_name, |n| n.chars().count() > 16) {
                line(out, &fit(&part, 18), 13.0, "bold", TEXT, false);
            }
            line(out, info.kind, 11.0, "normal", WEAK, true);
            for p in info.params.iter().take(KEY_PARAMS) {
                let value = entry.value_or_default(&spec.params, p.key);
                let fill = if spec.params.get(p.key).is_some() {
                    TEXT
                } else {
                    WEAK
                };
                let text = format!("{} = {}", p.key, value_text(&value));
                line(out, &fit(&text, 24), 11.0, "normal", fill, false);
            }
            if info.params.len() > KEY_PARAMS {
                let more = format!("+{} more", info.params.len() - KEY_PARAMS);
                line(out, &more, 11.0, "normal", WEAK, false);
            }
        }
        Err(_) => {
            line(out, &fit(&spec.kind, 20), 13.0, "bold", ERROR, false);
            line(out, "unknown kind", 11.0, "normal", ERROR, false);
        }
    }
    out.push_str("</g>\n");
}

fn value_text(v: &ParamValue) -> String {
    v.display()
}

/// The SVG (a standalone `<svg>` element that scales to its container).
pub fn blocks_svg(card: &Card, registry: &Registry) -> String {
    let diagram = Diagram::new((0.0, 0.0), Diagram::width_for_block(BLOCK_W));
    let (width, height) = diagram.size;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="blocks" viewBox="0 0 {width} {height}" role="img" aria-label="The six blocks of {}: {}" font-family="system-ui, sans-serif">"#,
        esc(&card.name),
        Slot::ALL
            .iter()
            .map(|s| format!("{} {}", s.title(), card.slot(*s).kind))
            .map(|s| esc(&s))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        r#"<rect width="{width}" height="{height}" rx="{RADIUS}" fill="{CANVAS}"/>"#
    );
    for a in diagram.arrows() {
        arrow(&mut out, &a);
    }
    for slot in LOOP.iter().chain([&Slot::Memory]) {
        block(&mut out, diagram.block(*slot), *slot, card, registry);
    }
    out.push_str("</svg>\n");
    out
}
