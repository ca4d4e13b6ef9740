//! The store side of the engine, for both SQLite and PostgreSQL: statements with bound values
//! ([`sql`]), counts of matches ([`count`]), a record by its `_id` ([`record`]), the points of
//! matches for places ([`points`]), record bodies and rows read straight from an SQLite file
//! ([`direct`]), the fold of an agg's grouped rows ([`fold`]), a whole version's statement read
//! on both cores ([`split`]), a guide's facts tallied in one read of an SQLite file
//! ([`tally`]), and the read replicas that take reads of records off a PostgreSQL primary
//! ([`replicas`]).

pub(crate) mod copy;
pub(crate) mod count;
pub(crate) mod direct;
pub(crate) mod fold;
pub(crate) mod points;
pub(crate) mod record;
pub(crate) mod replicas;
pub(crate) mod split;
pub(crate) mod sql;
pub(crate) mod tally;
