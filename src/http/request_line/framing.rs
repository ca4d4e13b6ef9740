//! Reading the lines of a request head: line ends, the request line's parts, and
//! `Content-Length` as hyper reads it.

/// A line without its `\n` or `\r\n`.
pub(super) fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `METHOD SP TARGET SP HTTP/1.x` → `(METHOD, TARGET)`.
pub(super) fn split_request_line(content: &[u8]) -> Option<(&[u8], &[u8])> {
    let first = content.iter().position(|&b| b == b' ')?;
    let (method, rest) = (&content[..first], &content[first + 1..]);
    let second = rest.iter().position(|&b| b == b' ')?;
    let (target, version) = (&rest[..second], &rest[second + 1..]);
    let known = version == b"HTTP/1.1" || version == b"HTTP/1.0";
    (!method.is_empty() && !target.is_empty() && known).then_some((method, target))
}

/// A `Content-Length` value as hyper reads it: digits, or a comma-separated list of the same
/// digits.
pub(super) fn parse_content_length(value: &[u8]) -> Option<u64> {
    let mut length = None;
    for item in value.split(|&b| b == b',') {
        let item = item.trim_ascii();
        if item.is_empty() || !item.iter().all(u8::is_ascii_digit) {
            return None;
        }
        let n: u64 = std::str::from_utf8(item).ok()?.parse().ok()?;
        if length.is_some_and(|seen| seen != n) {
            return None;
        }
        length = Some(n);
    }
    length
}
