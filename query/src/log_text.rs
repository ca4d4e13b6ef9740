//! Client-supplied text in log lines, clipped.
//!
//! A log line is written for the operator, not replayed for the client: whatever a client sent
//! (a method name, a path, a field name, a value, an error message that quotes them) goes into a
//! line through [`clip`] (or [`clip_display`] for anything that formats), which keeps its first
//! [`MAX_LOGGED_BYTES`] bytes, cut on a character boundary, and says how many bytes were left
//! out: `abc…(+1048570 bytes)`. Five requests with a 1 MB method name then write five short
//! lines, not 5 MB.

use std::fmt::{self, Display, Write};

/// The most bytes of one client-supplied text a log line carries.
pub const MAX_LOGGED_BYTES: usize = 200;

/// `text` for a log line: at most [`MAX_LOGGED_BYTES`] bytes of it, then `…(+N bytes)` when
/// `N` bytes were left out. Formats lazily: nothing is copied unless the line is written.
pub fn clip(text: &str) -> Clipped<&str> {
    Clipped(text)
}

/// `value` formatted for a log line, clipped like [`clip`]. The part beyond the limit is
/// counted, never stored.
pub fn clip_display<T: Display>(value: T) -> Clipped<T> {
    Clipped(value)
}

/// A value whose `Display` is clipped to [`MAX_LOGGED_BYTES`] bytes (see [`clip`]).
#[derive(Clone, Copy)]
pub struct Clipped<T>(T);

impl<T: Display> Display for Clipped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = Bounded {
            out: f,
            kept: 0,
            left_out: 0,
        };
        write!(out, "{}", self.0)?;
        let left_out = out.left_out;
        if left_out > 0 {
            write!(f, "…(+{left_out} bytes)")?;
        }
        Ok(())
    }
}

impl<T: Display> fmt::Debug for Clipped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        Display::fmt(self, f)
    }
}

/// Passes the first [`MAX_LOGGED_BYTES`] bytes on (cut on a character boundary) and counts
/// the rest.
struct Bounded<'a, 'b> {
    out: &'a mut fmt::Formatter<'b>,
    kept: usize,
    left_out: usize,
}

impl Write for Bounded<'_, '_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if self.left_out > 0 {
            self.left_out += s.len();
            return Ok(());
        }
        let room = MAX_LOGGED_BYTES - self.kept;
        if s.len() <= room {
            self.kept += s.len();
            return self.out.write_str(s);
        }
        let mut cut = room;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        self.kept += cut;
        self.left_out = s.len() - cut;
        self.out.write_str(&s[..cut])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(clip("tools/call").to_string(), "tools/call");
        let exact = "x".repeat(MAX_LOGGED_BYTES);
        assert_eq!(clip(&exact).to_string(), exact);
        assert_eq!(clip("").to_string(), "");
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        let text = "m".repeat(1 << 20);
        let clipped = clip(&text).to_string();
        assert_eq!(
            clipped,
            format!(
                "{}…(+{} bytes)",
                "m".repeat(MAX_LOGGED_BYTES),
                (1 << 20) - MAX_LOGGED_BYTES
            )
        );
        assert!(clipped.len() < MAX_LOGGED_BYTES + 30);
    }

    /// A character across the limit is left out whole: the kept part is valid UTF-8 and the
    /// count adds up to the original length.
    #[test]
    fn cuts_on_a_character_boundary() {
        let text = format!("{}溫泉溫泉", "a".repeat(MAX_LOGGED_BYTES - 1));
        let clipped = clip(&text).to_string();
        let (kept, marker) = clipped.split_once('…').unwrap();
        assert_eq!(kept, "a".repeat(MAX_LOGGED_BYTES - 1));
        let left_out: usize = marker
            .strip_prefix("(+")
            .and_then(|m| m.strip_suffix(" bytes)"))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(kept.len() + left_out, text.len());
    }

    /// Anything that formats is clipped, however many pieces it writes.
    #[test]
    fn display_values_are_clipped_too() {
        struct Pieces;
        impl Display for Pieces {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                for _ in 0..1000 {
                    f.write_str("ab")?;
                }
                Ok(())
            }
        }
        let clipped = clip_display(Pieces).to_string();
        assert_eq!(
            clipped,
            format!("{}…(+{} bytes)", "ab".repeat(100), 2000 - MAX_LOGGED_BYTES)
        );
        assert_eq!(format!("{:?}", clip("abc")), "abc");
    }
}
