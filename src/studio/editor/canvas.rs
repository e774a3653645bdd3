//! The loop canvas: the six slots as blocks in the loop (ARCHITECTURE.md) —
//! Population → SelectionPolicy → PromptBuilder → Proposer → Evaluator → back
//! to Population — with Memory above (read by the PromptBuilder, written after
//! evaluation). Each block shows its slot, implementation and key parameters;
//! clicking selects it, and palette items can be dropped on it. The canvas
//! zooms to fit all six blocks in whatever room it has; drag to pan,
//! Ctrl+scroll to zoom, and Fit (or a double click) goes back.

use egui::{
    Align2, Color32, FontId, Pos2, Rect, RichText, Sense, Shape, Stroke, StrokeKind, Ui, Vec2,
    pos2, vec2,
};

use crate::engine::card::diagram::{
    self, ARROW_TIP, Box2, Diagram, KEY_PARAMS, LabelSide, split_type_name,
};
use crate::engine::component::Slot;
use crate::engine::params::ParamValue;
use crate::studio::command::{Commands, UiCommand};
use crate::studio::editor::DragKind;
use crate::studio::panel::CardCtx;
use crate::studio::theme::{Palette, block_radius};

/// Where each block goes for a canvas of `width` starting at `origin`.
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Rects of [`LOOP`], in order.
    pub loop_blocks: [Rect; 5],
    /// Rect of the Memory block.
    pub memory: Rect,
    /// Total size used.
    pub size: Vec2,
    /// The same in the engine's terms (and the arrows).
    diagram: Diagram,
}

fn rect(b: Box2) -> Rect {
    Rect::from_min_size(pos2(b.x, b.y), vec2(b.w, b.h))
}

impl Layout {
    /// Lay the blocks out for the given width.
    pub fn new(origin: Pos2, width: f32) -> Self {
        let diagram = Diagram::new((origin.x, origin.y), width);
        Self {
            loop_blocks: diagram.loop_blocks.map(rect),
            memory: rect(diagram.memory),
            size: vec2(diagram.size.0, diagram.size.1),
            diagram,
        }
    }

    /// The rect of a slot's block.
    pub fn rect(&self, slot: Slot) -> Rect {
        rect(self.diagram.block(slot))
    }
}

fn arrow_head(painter: &egui::Painter, tip: Pos2, dir: Vec2, color: Color32) {
    let d = dir.normalized();
    let n = vec2(-d.y, d.x);
    let back = tip - d * ARROW_TIP * 1.4;
    painter.add(Shape::convex_polygon(
        vec![tip, back + n * ARROW_TIP * 0.7, back - n * ARROW_TIP * 0.7],
        color,
        Stroke::NONE,
    ));
}

/// A polyline with an arrow head at its end, and an optional label at the
/// midpoint of segment `label_at`.
fn arrow_path(
    painter: &egui::Painter,
    points: &[Pos2],
    palette: Palette,
    label: Option<diagram::ArrowLabel>,
) {
    let [.., a, b] = points else {
        return;
    };
    let stroke = Stroke::new(1.5, palette.arrow);
    let mut line = points.to_vec();
    if let Some(last) = line.last_mut() {
        *last = *b - (*b - *a).normalized() * ARROW_TIP;
    }
    painter.add(Shape::line(line, stroke));
    arrow_head(painter, *b, *b - *a, palette.arrow);
    if let Some(label) = label
        && let (Some(p), Some(q)) = (points.get(label.segment), points.get(label.segment + 1))
    {
        let mid = p.lerp(*q, 0.5);
        let (anchor, offset) = match label.side {
            LabelSide::Below => (Align2::CENTER_TOP, vec2(0.0, 4.0)),
            LabelSide::Left => (Align2::RIGHT_CENTER, vec2(-6.0, 0.0)),
            LabelSide::Right => (Align2::LEFT_CENTER, vec2(6.0, 0.0)),
        };
        painter.text(
            mid + offset,
            anchor,
            label.text,
            FontId::proportional(11.0),
            palette.weak,
        );
    }
}

/// Split a CamelCase type name into at most two lines when it is wider
/// than `width` (at the body font), breaking at the capital nearest the middle.
fn fit_name(ui: &Ui, name: &str, width: f32) -> Vec<String> {
    let font = egui::TextStyle::Body.resolve(ui.style());
    let wide = |text: &str| {
        ui.painter()
            .layout_no_wrap(text.to_owned(), font.clone(), Color32::WHITE)
            .size()
            .x
            > width
    };
    split_type_name(name, wide)
}

/// The canvas's view (what part of it is shown, at what zoom), kept between
/// frames. Until the user pans or zooms, it fits all six blocks.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CanvasView {
    /// The part of the canvas shown (canvas coordinates).
    pub rect: Rect,
    /// True once the user panned or zoomed (Fit clears it).
    pub moved: bool,
}

impl Default for CanvasView {
    fn default() -> Self {
        Self {
            rect: Rect::ZERO,
            moved: false,
        }
    }
}

/// The blocks' small text on screen, in points, and the most it may take in
/// the canvas's own coordinates to stay that size.
const SMALL_ON_SCREEN: f32 = 9.0;
const MAX_SMALL: f32 = 11.0;

/// Draw the canvas in the room `ui` has, zoomed to fit unless the user
/// moved it; clicks select blocks and drops assign implementations.
pub fn canvas_ui(ui: &mut Ui, ctx: &CardCtx<'_>, commands: &mut Commands, view: &mut CanvasView) {
    let room = ui.available_size();
    let layout = Layout::new(Pos2::ZERO, room.x.max(Diagram::min_width()));
    let content = Rect::from_min_size(Pos2::ZERO, layout.size);
    if !view.moved {
        // fit: the whole canvas, never magnified past 1:1
        let shown = content.size().max(room);
        view.rect = Rect::from_center_size(content.center(), shown);
    }
    let before = view.rect;
    let outer = Rect::from_min_size(ui.cursor().min, room);
    // the zoom the scene shows the canvas at (the shown part fills the room)
    let zoom = (room.x / view.rect.width()).min(room.y / view.rect.height());
    let scene = egui::Scene::new()
        .zoom_range(0.2..=2.0)
        .show(ui, &mut view.rect, |ui| {
            draw_canvas(ui, ctx, commands, &layout, zoom);
        });
    if view.rect != before && !view.moved {
        view.moved = true;
    }
    if scene.response.double_clicked() {
        view.moved = false;
    }
    ui.interact(outer, ui.scope_id().with("block-canvas"), Sense::hover())
        .widget_info(|| egui::WidgetInfo::labeled(egui::Role::Canvas, true, "Block canvas"));
    if view.moved {
        let fit = Rect::from_min_size(outer.right_top() + vec2(-52.0, 6.0), vec2(46.0, 22.0));
        if ui
            .put(fit, egui::Button::new("Fit"))
            .on_hover_text("Show all six blocks (or double-click the canvas)")
            .clicked()
        {
            view.moved = false;
        }
    }
}

/// Draw the blocks and arrows of `layout` into the canvas's own coordinates.
fn draw_canvas(
    ui: &mut Ui,
    ctx: &CardCtx<'_>,
    commands: &mut Commands,
    layout: &Layout,
    zoom: f32,
) {
    // the blocks' small lines (kind, parameters) stay legible when the
    // canvas is zoomed out to fit a small window: egui's 9-point small text
    // at the 0.8 of a 1024 px window was 7 points on screen. They grow
    // back towards 9 on screen (truncated sooner), up to 11 in the canvas
    let small = if zoom.is_finite() && zoom > 0.0 {
        (SMALL_ON_SCREEN / zoom).clamp(SMALL_ON_SCREEN, MAX_SMALL)
    } else {
        SMALL_ON_SCREEN
    };
    ui.style_mut()
        .text_styles
        .insert(egui::TextStyle::Small, FontId::proportional(small));
    let (canvas_rect, _) = ui.allocate_exact_size(layout.size, Sense::hover());
    let palette = ctx.palette;
    let painter = ui.painter_at(canvas_rect);
    painter.rect_filled(canvas_rect, block_radius(), palette.canvas);

    for arrow in layout.diagram.arrows() {
        let points: Vec<Pos2> = arrow.points.iter().map(|&(x, y)| pos2(x, y)).collect();
        arrow_path(&painter, &points, palette, arrow.label);
    }

    for slot in Slot::ALL {
        block_ui(ui, ctx, layout.rect(slot), slot, commands);
    }
}

fn block_ui(ui: &mut Ui, ctx: &CardCtx<'_>, rect: Rect, slot: Slot, commands: &mut Commands) {
    let palette = ctx.palette;
    let id = ui.scope_id().with(("block", slot.key()));
    let response = ui.interact(rect, id, Sense::click());
    let spec = ctx.card.slot(slot);
    let entry = ctx.registry.entry(slot, &spec.kind).ok();
    let info = entry.map(|e| e.info);
    let broken = ctx.problems.under(slot.key()).next().is_some();
    response.widget_info(|| {
        egui::WidgetInfo::selected(
            egui::Role::Button,
            true,
            ctx.selected == slot,
            format!("{} block", slot.title()),
        )
    });

    let hover_payload = response.dnd_hover_payload::<DragKind>();
    let accepts = hover_payload.as_ref().is_some_and(|p| p.slot == slot);
    if let Some(payload) = response.dnd_release_payload::<DragKind>()
        && payload.slot == slot
    {
        commands.push(UiCommand::SetKind {
            slot,
            kind: payload.kind.clone(),
        });
        commands.push(UiCommand::SelectSlot(slot));
    }
    if response.clicked() {
        commands.push(UiCommand::SelectSlot(slot));
    }

    let painter = ui.painter();
    let fill = if accepts || response.hovered() {
        palette.block_hover
    } else {
        palette.block
    };
    painter.rect_filled(rect, block_radius(), fill);
    let stroke = if accepts {
        Stroke::new(2.0, palette.accent)
    } else if hover_payload.is_some() {
        Stroke::new(1.0, palette.border.gamma_multiply(0.5))
    } else {
        palette.block_stroke(ctx.selected == slot, broken)
    };
    // accent stripe on top
    let stripe = Rect::from_min_size(rect.min, vec2(rect.width(), 4.0));
    painter.rect_filled(
        stripe,
        egui::CornerRadius {
            nw: crate::studio::theme::BLOCK_RADIUS,
            ne: crate::studio::theme::BLOCK_RADIUS,
            sw: 0,
            se: 0,
        },
        palette.slot(slot),
    );
    painter.rect_stroke(rect, block_radius(), stroke, StrokeKind::Inside);

    let inner = rect.shrink2(vec2(10.0, 8.0)).translate(vec2(0.0, 3.0));
    let mut child = ui.new_child(
        egui::UiBuilder::new()
            .max_rect(inner)
            .layout(egui::Layout::top_down(egui::Align::Min)),
    );
    child.spacing_mut().item_spacing.y = 2.0;
    let label = |ui: &mut Ui, text: RichText| {
        ui.add(egui::Label::new(text).truncate().selectable(false));
    };
    label(
        &mut child,
        RichText::new(slot.title())
            .small()
            .strong()
            .color(palette.slot(slot)),
    );
    match info {
        Some(info) => {
            let width = child.available_width();
            for line in fit_name(&child, info.type_name, width) {
                label(&mut child, RichText::new(line).strong().color(palette.text));
            }
            label(
                &mut child,
                RichText::new(info.kind)
                    .monospace()
                    .small()
                    .color(palette.weak),
            );
            child.add_space(3.0);
            for p in info.params.iter().take(KEY_PARAMS) {
                let explicit = spec.params.get(p.key);
                let value = entry.map_or(ParamValue::Null, |e| {
                    e.value_or_default(&spec.params, p.key)
                });
                let bad = ctx
                    .problems
                    .at(&format!("{}.{}", slot.key(), p.key))
                    .is_some();
                let color = if bad {
                    palette.error
                } else if explicit.is_some() {
                    palette.text
                } else {
                    palette.weak
                };
                label(
                    &mut child,
                    RichText::new(format!("{} = {}", p.key, value.display()))
                        .small()
                        .color(color),
                );
            }
            if info.params.len() > KEY_PARAMS {
                label(
                    &mut child,
                    RichText::new(format!("+{} more", info.params.len() - KEY_PARAMS))
                        .small()
                        .color(palette.weak),
                );
            }
        }
        None => {
            label(
                &mut child,
                RichText::new(&spec.kind).strong().color(palette.error),
            );
            label(
                &mut child,
                RichText::new("unknown kind").small().color(palette.error),
            );
        }
    }
    response.on_hover_text(slot.role());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_keeps_blocks_apart_and_memory_above() {
        for width in [400.0, 900.0, 1600.0] {
            let l = Layout::new(Pos2::ZERO, width);
            for pair in l.loop_blocks.windows(2) {
                assert!(
                    pair[0].right() < pair[1].left(),
                    "blocks overlap at {width}"
                );
            }
            assert!(l.memory.bottom() < l.loop_blocks[2].top());
            for slot in Slot::ALL {
                let r = l.rect(slot);
                assert!(
                    r.max.x <= l.size.x + 0.5 && r.max.y <= l.size.y + 0.5,
                    "{slot} outside"
                );
            }
            assert!(!l.memory.intersects(l.loop_blocks[0]));
        }
    }
}
