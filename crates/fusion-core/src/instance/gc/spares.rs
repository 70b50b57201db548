//! The boxes the transfer path reuses (`GlobalCache`'s, lent to the
//! holder's side in serve.rs).

use super::lms::Serve;
use crate::msg::Shipment;

/// Boxes kept for reuse on the transfer path. A block ping-pongs, so the
/// box that carried a shipment here carries the next one from here, rather
/// than being allocated by one instance and freed by the other every
/// transfer; likewise the box of a request served here.
#[derive(Default)]
pub(super) struct Spares {
    ships: Spare<Shipment>,
    serves: Spare<Serve>,
}

impl Spares {
    /// A served request in a box, a spare one if there is one.
    #[inline]
    pub fn wrap_serve(&mut self, serve: Serve) -> Box<Serve> {
        self.serves.wrap(serve)
    }

    /// The box of a request served here, for the next one.
    #[inline]
    pub fn keep_serve(&mut self, b: Box<Serve>) {
        self.serves.keep(b);
    }

    /// A shipment in a box, a spare one if there is one.
    #[inline]
    pub fn wrap_ship(&mut self, ship: Shipment) -> Box<Shipment> {
        self.ships.wrap(ship)
    }

    /// The box a shipment came in, for one shipped from here.
    #[inline]
    pub fn keep_ship(&mut self, b: Box<Shipment>) {
        self.ships.keep(b);
    }
}

/// Boxes of one kind: a few at most, as the transfer path takes them as
/// fast as they come.
struct Spare<T> {
    // Boxed on purpose: the boxes themselves are what is kept for reuse.
    #[allow(clippy::vec_box)]
    boxes: Vec<Box<T>>,
}

impl<T> Default for Spare<T> {
    fn default() -> Spare<T> {
        Spare { boxes: Vec::new() }
    }
}

impl<T> Spare<T> {
    const MAX: usize = 16;

    /// `value` in a box, a spare one if there is one.
    #[inline]
    fn wrap(&mut self, value: T) -> Box<T> {
        match self.boxes.pop() {
            Some(mut b) => {
                *b = value;
                b
            }
            None => Box::new(value),
        }
    }

    #[inline]
    fn keep(&mut self, b: Box<T>) {
        if self.boxes.len() < Self::MAX {
            self.boxes.push(b);
        }
    }
}
