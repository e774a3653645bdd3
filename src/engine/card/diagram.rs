//! Where the six blocks of a card and the arrows between them go when a card
//! is drawn: the loop Population → SelectionPolicy → PromptBuilder →
//! Proposer → Evaluator left to right, the return arrow below it, Memory
//! above with its read (to the PromptBuilder) and write (from the
//! Evaluator) arrows. The studio's canvas paints it with egui and the hub's
//! site writes it as SVG, so both draw the same picture from these numbers.

use crate::engine::component::Slot;

/// The five slots of the loop, left to right.
pub const LOOP: [Slot; 5] = [
    Slot::Population,
    Slot::SelectionPolicy,
    Slot::PromptBuilder,
    Slot::Proposer,
    Slot::Evaluator,
];

/// Parameters shown inside a block.
pub const KEY_PARAMS: usize = 3;
/// Length of an arrow's head.
pub const ARROW_TIP: f32 = 7.0;
/// Height of a block.
pub const BLOCK_H: f32 = 124.0;
/// Narrowest block; a narrower room is zoomed out instead.
pub const MIN_BLOCK_W: f32 = 100.0;
/// Widest block.
pub const MAX_BLOCK_W: f32 = 230.0;

const MARGIN: f32 = 14.0;
const GAP_X: f32 = 22.0;
const GAP_Y: f32 = 40.0;
const RETURN_DROP: f32 = 30.0;

/// An axis-aligned box in the diagram's coordinates (y grows downwards).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Box2 {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Box2 {
    pub fn cx(self) -> f32 {
        self.x + self.w / 2.0
    }
    pub fn cy(self) -> f32 {
        self.y + self.h / 2.0
    }
    pub fn right(self) -> f32 {
        self.x + self.w
    }
    pub fn bottom(self) -> f32 {
        self.y + self.h
    }
}

/// Which side of its segment an arrow's label sits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LabelSide {
    /// Centred below the segment.
    Below,
    /// Left of the segment, ending near it.
    Left,
    /// Right of the segment, starting near it.
    Right,
}

/// A label on one segment of an arrow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArrowLabel {
    pub text: &'static str,
    /// The segment (from `points[segment]` to `points[segment + 1]`).
    pub segment: usize,
    pub side: LabelSide,
}

/// A polyline whose last point is the arrow's tip.
#[derive(Clone, Debug, PartialEq)]
pub struct Arrow {
    pub points: Vec<(f32, f32)>,
    pub label: Option<ArrowLabel>,
}

/// The diagram for one width.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagram {
    /// The boxes of [`LOOP`], in order.
    pub loop_blocks: [Box2; 5],
    /// The Memory block.
    pub memory: Box2,
    /// Width and height used from the origin.
    pub size: (f32, f32),
}

impl Diagram {
    /// Lays the blocks out in `width` from `origin`: blocks as wide as fits
    /// (within [`MIN_BLOCK_W`]..=[`MAX_BLOCK_W`]), the row centred.
    pub fn new(origin: (f32, f32), width: f32) -> Diagram {
        let bw = ((width - 2.0 * MARGIN - 4.0 * GAP_X) / 5.0).clamp(MIN_BLOCK_W, MAX_BLOCK_W);
        let row_w = 5.0 * bw + 4.0 * GAP_X;
        let left = origin.0 + ((width - row_w) / 2.0).max(MARGIN);
        let top_mem = origin.1 + MARGIN;
        let top_loop = top_mem + BLOCK_H + GAP_Y;
        let loop_blocks = std::array::from_fn(|i| Box2 {
            x: left + i as f32 * (bw + GAP_X),
            y: top_loop,
            w: bw,
            h: BLOCK_H,
        });
        let mem_center = (loop_blocks[2].cx() + loop_blocks[4].cx()) / 2.0;
        let memory = Box2 {
            x: mem_center - bw / 2.0,
            y: top_mem,
            w: bw,
            h: BLOCK_H,
        };
        let size = (
            (left - origin.0) + row_w + MARGIN,
            top_loop + BLOCK_H + RETURN_DROP + MARGIN + 14.0 - origin.1,
        );
        Diagram {
            loop_blocks,
            memory,
            size,
        }
    }

    /// The narrowest width the blocks are laid out for.
    pub fn min_width() -> f32 {
        2.0 * MARGIN + 5.0 * MIN_BLOCK_W + 4.0 * GAP_X
    }

    /// The width whose blocks are `block_w` wide.
    pub fn width_for_block(block_w: f32) -> f32 {
        2.0 * MARGIN + 5.0 * block_w + 4.0 * GAP_X
    }

    /// The box of a slot's block.
    pub fn block(&self, slot: Slot) -> Box2 {
        LOOP.iter()
            .position(|s| *s == slot)
            .and_then(|i| self.loop_blocks.get(i).copied())
            .unwrap_or(self.memory)
    }

    /// The arrows: between neighbours in the loop, the return below it, and
    /// Memory's read and write.
    pub fn arrows(&self) -> Vec<Arrow> {
        let mut arrows: Vec<Arrow> = self
            .loop_blocks
            .windows(2)
            .filter_map(|pair| match pair {
                [a, b] => Some(Arrow {
                    points: vec![(a.right(), a.cy()), (b.x, a.cy())],
                    label: None,
                }),
                _ => None,
            })
            .collect();
        let (first, last) = (self.loop_blocks[0], self.loop_blocks[4]);
        let low = first.bottom() + RETURN_DROP;
        arrows.push(Arrow {
            points: vec![
                (last.cx(), last.bottom()),
                (last.cx(), low),
                (first.cx(), low),
                (first.cx(), first.bottom()),
            ],
            label: Some(ArrowLabel {
                text: "add the scored genome",
                segment: 1,
                side: LabelSide::Below,
            }),
        });
        let (mem, pb, ev) = (self.memory, self.loop_blocks[2], self.loop_blocks[4]);
        arrows.push(Arrow {
            points: vec![(mem.x, mem.cy()), (pb.cx(), mem.cy()), (pb.cx(), pb.y)],
            label: Some(ArrowLabel {
                text: "read",
                segment: 1,
                side: LabelSide::Left,
            }),
        });
        arrows.push(Arrow {
            points: vec![
                (ev.cx(), ev.y),
                (ev.cx(), mem.cy()),
                (mem.right(), mem.cy()),
            ],
            label: Some(ArrowLabel {
                text: "write",
                segment: 0,
                side: LabelSide::Right,
            }),
        });
        arrows
    }
}

/// A CamelCase type name in at most two lines when `too_wide` says one line
/// does not fit, broken at the capital nearest the middle.
pub fn split_type_name(name: &str, too_wide: impl Fn(&str) -> bool) -> Vec<String> {
    if !too_wide(name) {
        return vec![name.to_owned()];
    }
    let middle = name.len() / 2;
    let split = name
        .char_indices()
        .filter(|(i, c)| *i > 0 && c.is_ascii_uppercase())
        .map(|(i, _)| i)
        .min_by_key(|i| i.abs_diff(middle));
    match split {
        Some(i) => vec![name[..i].to_owned(), name[i..].to_owned()],
        None => vec![name.to_owned()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_do_not_overlap_and_fit_the_size() {
        for width in [400.0, Diagram::min_width(), 916.0, 1800.0] {
            let d = Diagram::new((0.0, 0.0), width);
            for pair in d.loop_blocks.windows(2) {
                assert!(pair[0].right() < pair[1].x, "{width}: {pair:?}");
            }
            assert!(d.memory.bottom() < d.loop_blocks[0].y);
            let last = d.loop_blocks[4];
            assert!(
                last.right() <= d.size.0 && last.bottom() <= d.size.1,
                "{width}"
            );
        }
    }

    #[test]
    fn block_width_follows_the_room_within_its_bounds() {
        let d = Diagram::new((0.0, 0.0), Diagram::width_for_block(160.0));
        assert!((d.loop_blocks[0].w - 160.0).abs() < 1e-3);
        assert_eq!(d.size.0, Diagram::width_for_block(160.0));
        assert_eq!(Diagram::new((0.0, 0.0), 10.0).memory.w, MIN_BLOCK_W);
        assert_eq!(Diagram::new((0.0, 0.0), 5000.0).memory.w, MAX_BLOCK_W);
    }

    #[test]
    fn arrows_end_on_the_blocks_they_point_at() {
        let d = Diagram::new((10.0, 20.0), 1000.0);
        let arrows = d.arrows();
        assert_eq!(arrows.len(), 7);
        let tip = |a: &Arrow| *a.points.last().unwrap_or(&(f32::NAN, f32::NAN));
        assert_eq!(tip(&arrows[0]).0, d.block(Slot::SelectionPolicy).x);
        assert_eq!(tip(&arrows[4]).1, d.block(Slot::Population).bottom());
        assert_eq!(tip(&arrows[5]).1, d.block(Slot::PromptBuilder).y);
        assert_eq!(tip(&arrows[6]).0, d.block(Slot::Memory).right());
    }

    #[test]
    fn long_names_split_at_the_capital_nearest_the_middle() {
        let long = |s: &str| s.chars().count() > 16;
        assert_eq!(split_type_name("Identity", long), ["Identity"]);
        assert_eq!(
            split_type_name("AgentCommandProposer", long),
            ["AgentCommand", "Proposer"]
        );
        assert_eq!(
            split_type_name("averyverylongnamewithoutcapitals", long),
            ["averyverylongnamewithoutcapitals"]
        );
    }
}
