//! The store side of the engine, for both SQLite and PostgreSQL: every statement the resolver
//! runs is built and run here, so a change to how records are stored stays in this folder.
//!
//! - Building: statements with bound values ([`sql`]).
//! - Records: a page of one part of a sort's order and an export's plan ([`page`]), counts of
//!   matches and the dictionary ids of a term ([`count`]), a record by its `_id` ([`record`]),
//!   bodies by position ([`bodies`]), the points of matches for places ([`points`]).
//! - Answers over many records: an agg's groups ([`agg`], folded by [`fold`]), what relevance
//!   reads ([`text`]), a guide's facts ([`facts`], tallied in one read of an SQLite file by
//!   [`tally`]), a version's content hash ([`hash`]).
//! - The catalog: datasets and fields ([`catalog`]), versions ([`versions`]), shared secrets
//!   ([`secrets`]).
//! - Reading: each version's own SQLite file ([`files`]), straight from an SQLite file
//!   ([`direct`]), a statement read on both cores ([`split`]), PostgreSQL's `COPY` stream
//!   ([`copy`]), and the read replicas that take reads of records off a PostgreSQL primary
//!   ([`replicas`]).

pub(crate) mod agg;
pub(crate) mod bodies;
pub(crate) mod catalog;
pub(crate) mod copy;
pub(crate) mod count;
pub(crate) mod direct;
pub(crate) mod facts;
pub(crate) mod files;
pub(crate) mod fold;
pub(crate) mod hash;
pub(crate) mod page;
pub(crate) mod points;
pub(crate) mod record;
pub(crate) mod replicas;
pub(crate) mod secrets;
pub(crate) mod sessions;
pub(crate) mod split;
pub(crate) mod sql;
pub(crate) mod tally;
pub(crate) mod text;
pub(crate) mod versions;
