//! PostgreSQL's binary `COPY` format, as far as the records streams write it: a header, then
//! per record its field count and each field as a length and the bytes of the type's binary
//! form (`bigint` and `double precision` big-endian, `text` its UTF-8 bytes, `jsonb` a version
//! byte before the JSON text), then a trailer.

/// The signature, no flags, and no header extension.
pub const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";

/// A field count of -1 ends the data.
pub const TRAILER: &[u8] = &(-1i16).to_be_bytes();

/// The only version of jsonb's binary form: the JSON text follows it.
const JSONB_VERSION: u8 = 1;

/// Starts a record of `fields` fields.
pub fn tuple(out: &mut Vec<u8>, fields: usize) {
    let fields = i16::try_from(fields).expect("a table has at most 1,600 columns");
    out.extend_from_slice(&fields.to_be_bytes());
}

/// A field holding `bytes`.
pub fn field(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&length(bytes.len() as u64).to_be_bytes());
    out.extend_from_slice(bytes);
}

/// A `jsonb` field holding the JSON text `json`.
pub fn jsonb(out: &mut Vec<u8>, json: &str) {
    out.extend_from_slice(&length(json.len() as u64 + 1).to_be_bytes());
    out.push(JSONB_VERSION);
    out.extend_from_slice(json.as_bytes());
}

/// A NULL field.
pub fn null(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i32).to_be_bytes());
}

/// The most a field may hold: PostgreSQL allocates no value of 1 GiB or more.
pub const MAX_FIELD_BYTES: usize = (1 << 30) - 1;

/// A field's length, which the caller checked against [`MAX_FIELD_BYTES`].
fn length(bytes: u64) -> i32 {
    i32::try_from(bytes).expect("fields are checked against MAX_FIELD_BYTES")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_a_length_and_their_bytes() {
        let mut out = Vec::new();
        tuple(&mut out, 4);
        field(&mut out, &7i64.to_be_bytes());
        jsonb(&mut out, "{}");
        null(&mut out);
        field(&mut out, &1.5f64.to_be_bytes());
        assert_eq!(
            out,
            [
                &[0, 4][..],
                &[0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 7],
                &[0, 0, 0, 3, 1, b'{', b'}'],
                &[0xff, 0xff, 0xff, 0xff],
                &[0, 0, 0, 8, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
            ]
            .concat()
        );
        assert_eq!(HEADER.len(), 19);
        assert_eq!(TRAILER, [0xff, 0xff]);
    }
}
