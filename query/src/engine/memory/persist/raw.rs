//! Raw arrays in an index file: each a length (`u64`, little-endian) then its elements'
//! bytes, little-endian, as they lie in memory. Reading one is one `read_exact` into the
//! `Vec` it becomes, not a parse per element; a CRC-32 of every byte catches a torn or
//! corrupt file.

use std::io::{self, Read, Write};

use super::super::rows::Stretch;

/// A type whose values are their bytes: no padding, every bit pattern a valid value.
///
/// # Safety
///
/// Implement only for types of that kind (plain integers, floats, `#[repr(C)]` structs of
/// them without padding): arrays of them are read and written as bytes.
pub(super) unsafe trait Raw: Copy + Default {
    /// The value as read from its little-endian bytes (the identity on little-endian CPUs).
    fn le_native(self) -> Self;
}

macro_rules! raw_int {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive integer: no padding, every bit pattern valid.
        unsafe impl Raw for $t {
            fn le_native(self) -> Self {
                <$t>::from_le(self)
            }
        }
    )*};
}
raw_int!(u8, u16, u32, u64, i8, i16, i32);

// SAFETY: floats have no padding and every bit pattern is a float (NaNs included).
unsafe impl Raw for f32 {
    fn le_native(self) -> Self {
        f32::from_bits(u32::from_le(self.to_bits()))
    }
}

// SAFETY: as for f32.
unsafe impl Raw for f64 {
    fn le_native(self) -> Self {
        f64::from_bits(u64::from_le(self.to_bits()))
    }
}

// SAFETY: `#[repr(C)]` of two u32s: 8 bytes, no padding, any bits valid.
unsafe impl Raw for Stretch {
    fn le_native(self) -> Self {
        Stretch {
            start: u32::from_le(self.start),
            high: u32::from_le(self.high),
        }
    }
}

/// The bytes of `values` as they lie in memory.
fn bytes_of<T: Raw>(values: &[T]) -> &[u8] {
    // SAFETY: `T: Raw` has no padding, so each of its bytes is initialized; the slice covers
    // exactly the values' memory and borrows them.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), size_of_val(values)) }
}

/// The bytes of `values`, to be overwritten.
fn bytes_of_mut<T: Raw>(values: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes_of`, and any bytes written are a valid `T` (`Raw`).
    unsafe { std::slice::from_raw_parts_mut(values.as_mut_ptr().cast::<u8>(), size_of_val(values)) }
}

/// Writes an index file's parts, keeping the checksum of what it wrote.
pub(super) struct Sink<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    written: u64,
}

impl<W: Write> Sink<W> {
    pub(super) fn new(out: W) -> Self {
        Sink {
            out,
            crc: crc32fast::Hasher::new(),
            written: 0,
        }
    }

    /// `bytes` as they are (no length before them).
    pub(super) fn bytes(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.crc.update(bytes);
        self.written += bytes.len() as u64;
        self.out.write_all(bytes)
    }

    pub(super) fn u8(&mut self, value: u8) -> io::Result<()> {
        self.bytes(&[value])
    }

    pub(super) fn u64(&mut self, value: u64) -> io::Result<()> {
        self.bytes(&value.to_le_bytes())
    }

    /// `values` as a raw array: their count, then their bytes.
    pub(super) fn array<T: Raw>(&mut self, values: &[T]) -> io::Result<()> {
        self.u64(values.len() as u64)?;
        if cfg!(target_endian = "little") {
            self.bytes(bytes_of(values))
        } else {
            let swapped: Vec<T> = values.iter().map(|v| v.le_native()).collect();
            self.bytes(bytes_of(&swapped))
        }
    }

    /// Ends the file with the checksum of everything before it; the bytes written.
    pub(super) fn finish(mut self) -> io::Result<(W, u64)> {
        let crc = self.crc.clone().finalize();
        self.out.write_all(&crc.to_le_bytes())?;
        self.out.flush()?;
        Ok((self.out, self.written + 4))
    }
}

/// Reads an index file's parts, keeping the checksum of what it read. Every length is checked
/// against the bytes left, so a corrupt one fails instead of asking for terabytes.
pub(super) struct Source<R: Read> {
    input: R,
    crc: crc32fast::Hasher,
    /// Bytes left before the checksum.
    left: u64,
}

impl<R: Read> Source<R> {
    /// A file of `size` bytes (the checksum included).
    pub(super) fn new(input: R, size: u64) -> io::Result<Self> {
        let left = size
            .checked_sub(4)
            .ok_or_else(|| invalid("shorter than a checksum"))?;
        Ok(Source {
            input,
            crc: crc32fast::Hasher::new(),
            left,
        })
    }

    fn fill(&mut self, bytes: &mut [u8]) -> io::Result<()> {
        let n = bytes.len() as u64;
        if n > self.left {
            return Err(invalid("a part runs past the end"));
        }
        self.input.read_exact(bytes)?;
        self.crc.update(bytes);
        self.left -= n;
        Ok(())
    }

    pub(super) fn u8(&mut self) -> io::Result<u8> {
        let mut b = [0u8; 1];
        self.fill(&mut b)?;
        Ok(b[0])
    }

    pub(super) fn u64(&mut self) -> io::Result<u64> {
        let mut b = [0u8; 8];
        self.fill(&mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    /// `n` bytes, as one array of them.
    pub(super) fn exact(&mut self, n: usize) -> io::Result<Vec<u8>> {
        let mut bytes = vec![0u8; n];
        self.fill(&mut bytes)?;
        Ok(bytes)
    }

    /// A raw array written by [`Sink::array`]: one allocation, one read.
    pub(super) fn array<T: Raw>(&mut self) -> io::Result<Vec<T>> {
        let n = self.u64()?;
        let size = n
            .checked_mul(size_of::<T>() as u64)
            .filter(|&bytes| bytes <= self.left)
            .ok_or_else(|| invalid("an array runs past the end"))?;
        let mut values = vec![T::default(); size as usize / size_of::<T>().max(1)];
        self.fill(bytes_of_mut(&mut values))?;
        if cfg!(target_endian = "big") {
            values.iter_mut().for_each(|v| *v = v.le_native());
        }
        Ok(values)
    }

    /// Checks that everything was read and that the checksum matches.
    pub(super) fn finish(mut self) -> io::Result<()> {
        if self.left != 0 {
            return Err(invalid("bytes left after the last part"));
        }
        let mut b = [0u8; 4];
        self.input.read_exact(&mut b)?;
        if self.crc.clone().finalize() != u32::from_le_bytes(b) {
            return Err(invalid("checksum mismatch"));
        }
        Ok(())
    }
}

/// The error of a file that is not a valid index file.
pub(super) fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}
