//! Each structure of an index as raw arrays, and back. A variant is one tag byte before its
//! arrays; a reader checks the lengths a structure's use relies on (codes and values one a
//! row, a row list's stretches within it), so a file that passed its checksum but disagrees
//! with itself fails here rather than panicking in a query.

use std::io::{self, Read, Write};

use super::raw::{Sink, Source, invalid};
use crate::engine::memory::FieldIndex;
use crate::engine::memory::column::{
    Codes, Dict, IdColumn, Ids, NumColumn, Numbers, Postings, StrColumn, TextColumn,
};
use crate::engine::memory::rows::{Bits, RowList};

/// Writes a structure's arrays.
pub(super) trait Put {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()>;
}

/// Reads a structure written by [`Put`]; `rows` is the index's row count.
pub(super) trait Take: Sized {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self>;
}

/// The byte before each variant's arrays (a change is a new [`super::FORMAT`]).
mod tag {
    pub(super) const CODES_U8: u8 = 1;
    pub(super) const CODES_U16: u8 = 2;
    pub(super) const CODES_U32: u8 = 4;
    pub(super) const NUMBERS_I8: u8 = 1;
    pub(super) const NUMBERS_I16: u8 = 2;
    pub(super) const NUMBERS_I32: u8 = 3;
    pub(super) const NUMBERS_F32: u8 = 4;
    pub(super) const NUMBERS_F64: u8 = 5;
    pub(super) const LIST_WIDE: u8 = 0;
    pub(super) const LIST_SPLIT: u8 = 1;
    pub(super) const LIST_RUN: u8 = 2;
    pub(super) const FIELD_NONE: u8 = 0;
    pub(super) const FIELD_STR: u8 = 1;
    pub(super) const FIELD_NUM: u8 = 2;
    pub(super) const FIELD_TEXT: u8 = 3;
    pub(super) const FIELD_ID: u8 = 4;
    pub(super) const IDS_TEXTS: u8 = 0;
    pub(super) const IDS_NUMBERS: u8 = 1;
}

fn check(ok: bool, why: &str) -> io::Result<()> {
    if ok { Ok(()) } else { Err(invalid(why)) }
}

impl Put for Dict {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        out.array(self.text.as_bytes())?;
        out.array(&self.ends)
    }
}

impl Take for Dict {
    fn take<R: Read>(input: &mut Source<R>, _rows: usize) -> io::Result<Self> {
        let text = String::from_utf8(input.array::<u8>()?)
            .map_err(|_| invalid("a dictionary is not UTF-8"))?;
        let ends: Vec<u32> = input.array()?;
        let mut start = 0usize;
        for &end in &ends {
            let end = end as usize;
            check(
                start <= end && end <= text.len() && text.is_char_boundary(end),
                "a dictionary's ends",
            )?;
            start = end;
        }
        Ok(Dict { text, ends })
    }
}

impl Put for Codes {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        match self {
            Codes::U8(v) => {
                out.u8(tag::CODES_U8)?;
                out.array(v)
            }
            Codes::U16(v) => {
                out.u8(tag::CODES_U16)?;
                out.array(v)
            }
            Codes::U32(v) => {
                out.u8(tag::CODES_U32)?;
                out.array(v)
            }
        }
    }
}

impl Take for Codes {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let codes = match input.u8()? {
            tag::CODES_U8 => Codes::U8(input.array()?),
            tag::CODES_U16 => Codes::U16(input.array()?),
            tag::CODES_U32 => Codes::U32(input.array()?),
            _ => return Err(invalid("a code type")),
        };
        check(codes.len() == rows, "codes, one a row")?;
        Ok(codes)
    }
}

impl Put for Bits {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        out.array(&self.words)
    }
}

impl Take for Bits {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let words: Vec<u64> = input.array()?;
        check(words.len() == rows.div_ceil(64), "a bit set over the rows")?;
        Ok(Bits { words })
    }
}

impl Put for RowList {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        match self {
            RowList::Wide(rows) => {
                out.u8(tag::LIST_WIDE)?;
                out.array(rows)
            }
            RowList::Split { low, stretches } => {
                out.u8(tag::LIST_SPLIT)?;
                out.array(low)?;
                out.array(stretches)
            }
            RowList::Run { first, len } => {
                out.u8(tag::LIST_RUN)?;
                out.u64(u64::from(*first))?;
                out.u64(u64::from(*len))
            }
        }
    }
}

impl Take for RowList {
    fn take<R: Read>(input: &mut Source<R>, _rows: usize) -> io::Result<Self> {
        match input.u8()? {
            tag::LIST_WIDE => Ok(RowList::Wide(input.array()?)),
            tag::LIST_SPLIT => {
                let low: Vec<u16> = input.array()?;
                let stretches: Vec<crate::engine::memory::rows::Stretch> = input.array()?;
                // A lookup finds the last stretch starting at or before `i`: the first must
                // start at 0 and each after it later.
                let ordered = stretches.first().is_none_or(|s| s.start == 0)
                    && stretches.windows(2).all(|w| w[0].start < w[1].start)
                    && stretches
                        .last()
                        .is_none_or(|s| (s.start as usize) < low.len());
                check(
                    ordered && (low.is_empty() || !stretches.is_empty()),
                    "a row list's stretches",
                )?;
                Ok(RowList::Split { low, stretches })
            }
            tag::LIST_RUN => {
                let first = u32::try_from(input.u64()?);
                let len = u32::try_from(input.u64()?);
                match (first, len) {
                    (Ok(first), Ok(len)) if first.checked_add(len).is_some() => {
                        Ok(RowList::Run { first, len })
                    }
                    _ => Err(invalid("a run of rows beyond the rows")),
                }
            }
            _ => Err(invalid("a row list's form")),
        }
    }
}

impl Put for Postings {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        out.array(&self.starts)?;
        self.rows.put(out)?;
        out.array(&self.sizes)?;
        let codes: Vec<u32> = self.dense.iter().map(|(code, _)| *code).collect();
        out.array(&codes)?;
        self.dense.iter().try_for_each(|(_, bits)| bits.put(out))
    }
}

impl Take for Postings {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let starts: Vec<u32> = input.array()?;
        let list = RowList::take(input, rows)?;
        let sizes: Vec<u32> = input.array()?;
        let codes: Vec<u32> = input.array()?;
        let dense = codes
            .into_iter()
            .map(|code| Ok((code, Bits::take(input, rows)?)))
            .collect::<io::Result<Vec<_>>>()?;
        check(
            starts.windows(2).all(|w| w[0] <= w[1])
                && starts.last().is_none_or(|&n| n as usize == list.len())
                && (sizes.is_empty() || sizes.len() + 1 == starts.len())
                && dense.windows(2).all(|w| w[0].0 < w[1].0),
            "postings",
        )?;
        Ok(Postings {
            starts,
            rows: list,
            sizes,
            dense,
        })
    }
}

impl Put for StrColumn {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        self.dict.put(out)?;
        self.codes.put(out)?;
        self.postings.put(out)
    }
}

impl Take for StrColumn {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let dict = Dict::take(input, rows)?;
        let codes = Codes::take(input, rows)?;
        let postings = Postings::take(input, rows)?;
        check(postings.starts.len() == dict.len() + 1, "postings by value")?;
        Ok(StrColumn {
            dict,
            codes,
            postings,
        })
    }
}

impl Put for IdColumn {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        match &self.ids {
            Ids::Numbers(numbers) => {
                out.u8(tag::IDS_NUMBERS)?;
                out.array(numbers)?;
            }
            Ids::Texts(texts) => {
                out.u8(tag::IDS_TEXTS)?;
                texts.put(out)?;
            }
        }
        self.sorted.put(out)
    }
}

impl Take for IdColumn {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let ids = match input.u8()? {
            tag::IDS_NUMBERS => Ids::Numbers(input.array()?),
            tag::IDS_TEXTS => Ids::Texts(Dict::take(input, rows)?),
            _ => return Err(invalid("an unknown kind of ids")),
        };
        let sorted = RowList::take(input, rows)?;
        check(ids.len() == rows && sorted.len() == rows, "ids, one a row")?;
        Ok(IdColumn { ids, sorted })
    }
}

impl Put for TextColumn {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        self.codes.put(out)?;
        self.postings.put(out)
    }
}

impl Take for TextColumn {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        Ok(TextColumn {
            codes: Codes::take(input, rows)?,
            postings: Postings::take(input, rows)?,
        })
    }
}

impl Put for Numbers {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        match self {
            Numbers::I8(v) => {
                out.u8(tag::NUMBERS_I8)?;
                out.array(v)
            }
            Numbers::I16(v) => {
                out.u8(tag::NUMBERS_I16)?;
                out.array(v)
            }
            Numbers::I32(v) => {
                out.u8(tag::NUMBERS_I32)?;
                out.array(v)
            }
            Numbers::F32(v) => {
                out.u8(tag::NUMBERS_F32)?;
                out.array(v)
            }
            Numbers::F64(v) => {
                out.u8(tag::NUMBERS_F64)?;
                out.array(v)
            }
        }
    }
}

impl Take for Numbers {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let values = match input.u8()? {
            tag::NUMBERS_I8 => Numbers::I8(input.array()?),
            tag::NUMBERS_I16 => Numbers::I16(input.array()?),
            tag::NUMBERS_I32 => Numbers::I32(input.array()?),
            tag::NUMBERS_F32 => Numbers::F32(input.array()?),
            tag::NUMBERS_F64 => Numbers::F64(input.array()?),
            _ => return Err(invalid("a number type")),
        };
        check(values.len() == rows, "numbers, one a row")?;
        Ok(values)
    }
}

impl Put for NumColumn {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        self.values.put(out)?;
        self.order.put(out)
    }
}

impl Take for NumColumn {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        let values = Numbers::take(input, rows)?;
        let order = RowList::take(input, rows)?;
        check(order.len() <= rows, "a value order within the rows")?;
        Ok(NumColumn { values, order })
    }
}

impl Put for FieldIndex {
    fn put<W: Write>(&self, out: &mut Sink<W>) -> io::Result<()> {
        match self {
            FieldIndex::None => out.u8(tag::FIELD_NONE),
            FieldIndex::Id => out.u8(tag::FIELD_ID),
            FieldIndex::Str(c) => {
                out.u8(tag::FIELD_STR)?;
                c.put(out)
            }
            FieldIndex::Num(c) => {
                out.u8(tag::FIELD_NUM)?;
                c.put(out)
            }
            FieldIndex::Text(c) => {
                out.u8(tag::FIELD_TEXT)?;
                c.put(out)
            }
        }
    }
}

impl Take for FieldIndex {
    fn take<R: Read>(input: &mut Source<R>, rows: usize) -> io::Result<Self> {
        Ok(match input.u8()? {
            tag::FIELD_NONE => FieldIndex::None,
            tag::FIELD_ID => FieldIndex::Id,
            tag::FIELD_STR => FieldIndex::Str(StrColumn::take(input, rows)?),
            tag::FIELD_NUM => FieldIndex::Num(NumColumn::take(input, rows)?),
            tag::FIELD_TEXT => FieldIndex::Text(TextColumn::take(input, rows)?),
            _ => return Err(invalid("a field's kind")),
        })
    }
}
