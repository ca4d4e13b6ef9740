//! Number columns: values in the narrowest exact type, rows in value order for sorts and
//! ranges, and the builder that reads them in row order.

use super::*;

/// A number column's values by row, each held in the narrowest type that keeps every value of
/// the column exactly (small integers take 1–2 bytes instead of 8).
/// Integer types give their smallest value to "missing"; floats use NaN.
#[derive(Debug)]
pub(crate) enum Numbers {
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Default for Numbers {
    fn default() -> Self {
        Numbers::I8(Vec::new())
    }
}

impl Numbers {
    /// `values` (NaN for missing, no `-0.0`) in the narrowest exact type.
    pub(super) fn new(values: Vec<f64>) -> Self {
        // One pass: whether every value is whole, and the range of the values.
        let (mut whole, mut low, mut high) = (true, f64::INFINITY, f64::NEG_INFINITY);
        for &v in values.iter().filter(|v| !v.is_nan()) {
            whole &= v.fract() == 0.0;
            low = low.min(v);
            high = high.max(v);
        }
        let fits = |min: f64, max: f64| whole && low > min && high <= max;
        fn narrow<T: Copy>(values: &[f64], missing: T, cast: impl Fn(f64) -> T) -> Vec<T> {
            values
                .iter()
                .map(|&v| if v.is_nan() { missing } else { cast(v) })
                .collect()
        }
        if fits(f64::from(i8::MIN), f64::from(i8::MAX)) {
            Numbers::I8(narrow(&values, i8::MIN, |v| v as i8))
        } else if fits(f64::from(i16::MIN), f64::from(i16::MAX)) {
            Numbers::I16(narrow(&values, i16::MIN, |v| v as i16))
        } else if fits(f64::from(i32::MIN), f64::from(i32::MAX)) {
            Numbers::I32(narrow(&values, i32::MIN, |v| v as i32))
        } else if values
            .iter()
            .all(|&v| v.is_nan() || f64::from(v as f32) == v)
        {
            Numbers::F32(narrow(&values, f32::NAN, |v| v as f32))
        } else {
            Numbers::F64(values)
        }
    }

    /// The value of `row`; NaN when it has none.
    #[inline]
    pub(crate) fn get(&self, row: usize) -> f64 {
        match self {
            Numbers::I8(v) => match v[row] {
                i8::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::I16(v) => match v[row] {
                i16::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::I32(v) => match v[row] {
                i32::MIN => f64::NAN,
                x => f64::from(x),
            },
            Numbers::F32(v) => f64::from(v[row]),
            Numbers::F64(v) => v[row],
        }
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        match self {
            Numbers::I8(v) => v.len(),
            Numbers::I16(v) => v.len(),
            Numbers::I32(v) => v.len(),
            Numbers::F32(v) => v.len(),
            Numbers::F64(v) => v.len(),
        }
    }

    pub(super) fn reserve(&mut self, more: usize) {
        match self {
            Numbers::I8(v) => v.reserve_exact(more),
            Numbers::I16(v) => v.reserve_exact(more),
            Numbers::I32(v) => v.reserve_exact(more),
            Numbers::F32(v) => v.reserve_exact(more),
            Numbers::F64(v) => v.reserve_exact(more),
        }
    }

    pub(super) fn shrink_to_fit(&mut self) {
        match self {
            Numbers::I8(v) => v.shrink_to_fit(),
            Numbers::I16(v) => v.shrink_to_fit(),
            Numbers::I32(v) => v.shrink_to_fit(),
            Numbers::F32(v) => v.shrink_to_fit(),
            Numbers::F64(v) => v.shrink_to_fit(),
        }
    }

    /// Heap bytes held.
    pub(super) fn bytes(&self) -> usize {
        match self {
            Numbers::I8(v) => v.capacity(),
            Numbers::I16(v) => v.capacity() * 2,
            Numbers::I32(v) => v.capacity() * 4,
            Numbers::F32(v) => v.capacity() * 4,
            Numbers::F64(v) => v.capacity() * 8,
        }
    }
}

/// A number field: values per row (NaN when missing) and the rows that have one, in order.
#[derive(Debug, Default)]
pub(crate) struct NumColumn {
    pub values: Numbers,
    /// Rows with a value, by value then row (SQL's order, ties in file order).
    pub order: RowList,
}

/// Integer columns spanning at most this many values are put in order by counting.
pub(super) const COUNTING_SPAN: i64 = 1 << 20;

impl NumColumn {
    /// The column of `values` (NaN for a missing value).
    #[cfg(test)]
    pub(crate) fn new(values: Vec<f64>) -> Self {
        let mut builder = NumBuilder::default();
        values.into_iter().for_each(|v| builder.push(v));
        builder.finish()
    }

    /// The part of [`Self::order`] whose value equals `value`.
    pub(crate) fn equal(&self, value: f64) -> Rows<'_> {
        let low = self
            .order
            .partition_point(|r| self.values.get(r as usize) < value);
        let high = self
            .order
            .partition_point(|r| self.values.get(r as usize) <= value);
        self.order.slice(low..high.max(low))
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        self.values.bytes() + self.order.bytes()
    }
}

/// Collects a number column row by row in the narrowest type its values so far allow, so a
/// build never holds every column as `f64`.
#[derive(Debug, Default)]
pub(crate) struct NumBuilder {
    pub(super) values: Numbers,
    /// Rows expected: room kept for them when the type widens.
    pub(super) rows: usize,
}

impl NumBuilder {
    /// A builder with room for `rows` rows.
    pub(crate) fn with_capacity(rows: usize) -> Self {
        NumBuilder {
            values: Numbers::I8(Vec::with_capacity(rows)),
            rows,
        }
    }

    /// Appends the next row's value (NaN or an infinity: none). `-0.0` is kept as `0.0`, as
    /// the stores give it back.
    pub(crate) fn push(&mut self, value: f64) {
        let v = if value == 0.0 {
            0.0
        } else if value.is_finite() {
            value
        } else {
            f64::NAN
        };
        match &mut self.values {
            Numbers::I8(x) if v.is_nan() => x.push(i8::MIN),
            Numbers::I16(x) if v.is_nan() => x.push(i16::MIN),
            Numbers::I32(x) if v.is_nan() => x.push(i32::MIN),
            Numbers::I8(x) if whole_in(v, i8::MIN.into(), i8::MAX.into()) => x.push(v as i8),
            Numbers::I16(x) if whole_in(v, i16::MIN.into(), i16::MAX.into()) => x.push(v as i16),
            Numbers::I32(x) if whole_in(v, i32::MIN.into(), i32::MAX.into()) => x.push(v as i32),
            Numbers::F32(x) if v.is_nan() || f64::from(v as f32) == v => x.push(v as f32),
            Numbers::F64(x) => x.push(v),
            _ => {
                // A value the type cannot hold: widen to what the values and it need.
                let mut all: Vec<f64> =
                    (0..self.values.len()).map(|r| self.values.get(r)).collect();
                all.push(v);
                self.values = Numbers::new(all);
                self.values
                    .reserve(self.rows.saturating_sub(self.values.len()));
            }
        }
    }

    /// Appends the rows `other` collected after this builder's (a build read in parts),
    /// widening the type when `other`'s values need it.
    pub(crate) fn append(&mut self, other: NumBuilder) {
        let more = other.values;
        match (&mut self.values, &more) {
            (Numbers::I8(a), Numbers::I8(b)) => a.extend_from_slice(b),
            (Numbers::I16(a), Numbers::I16(b)) => a.extend_from_slice(b),
            (Numbers::I32(a), Numbers::I32(b)) => a.extend_from_slice(b),
            (Numbers::F32(a), Numbers::F32(b)) => a.extend_from_slice(b),
            (Numbers::F64(a), Numbers::F64(b)) => a.extend_from_slice(b),
            _ => (0..more.len()).for_each(|row| self.push(more.get(row))),
        }
    }

    /// The column, with its value order.
    pub(crate) fn finish(self) -> NumColumn {
        let mut values = self.values;
        values.shrink_to_fit();
        let order = match &values {
            Numbers::I8(v) => counting_order(v, i8::MIN),
            Numbers::I16(v) => counting_order(v, i16::MIN),
            Numbers::I32(v) => counting_order(v, i32::MIN),
            Numbers::F32(_) | Numbers::F64(_) => None,
        }
        .unwrap_or_else(|| {
            let mut order: Vec<u32> = (0..values.len() as u32)
                .filter(|&r| !values.get(r as usize).is_nan())
                .collect();
            order.sort_by(|&a, &b| values.get(a as usize).total_cmp(&values.get(b as usize)));
            order
        });
        NumColumn {
            values,
            order: RowList::new(order),
        }
    }
}

/// Whether `v` is a whole number in `min < v <= max` (`min` stands for "missing").
pub(super) fn whole_in(v: f64, min: f64, max: f64) -> bool {
    v.fract() == 0.0 && v > min && v <= max
}

/// The rows with a value by value then row, by counting: linear, where a comparison sort of a
/// large column takes seconds. `None` when the values span too wide a range.
pub(super) fn counting_order<T: Copy + PartialEq + Into<i64>>(
    values: &[T],
    missing: T,
) -> Option<Vec<u32>> {
    let present = || values.iter().filter(|&&v| v != missing).map(|&v| v.into());
    let (low, high) = present().fold((i64::MAX, i64::MIN), |(l, h), v| (l.min(v), h.max(v)));
    if low > high {
        return Some(Vec::new());
    }
    if high - low >= COUNTING_SPAN {
        return None;
    }
    let mut next = vec![0u32; (high - low + 2) as usize];
    present().for_each(|v| next[(v - low + 1) as usize] += 1);
    for i in 1..next.len() {
        next[i] += next[i - 1];
    }
    let mut order = vec![0u32; next[next.len() - 1] as usize];
    for (row, &v) in values.iter().enumerate() {
        if v != missing {
            let slot = &mut next[(v.into() - low) as usize];
            order[*slot as usize] = row as u32;
            *slot += 1;
        }
    }
    Some(order)
}
