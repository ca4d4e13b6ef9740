//! PostgreSQL's `COPY … TO STDOUT` in text format: a whole read as one stream, with no
//! statement or result map per row, cut into blocks that other threads parse (the index build
//! reads every row this way, and the content hash every body).

use futures_util::StreamExt;

/// Runs `COPY (<select>) TO STDOUT` and sends its rows to `sender` in blocks of whole lines,
/// each at least `block_bytes` long but the last, so that other threads parse them while the
/// read goes on ([`each_line`] cuts a block). A closed channel ends the read quietly: the
/// receiver's own error is the one to report.
pub(crate) async fn send_blocks(
    pool: &sqlx::PgPool,
    select: &str,
    block_bytes: usize,
    sender: tokio::sync::mpsc::Sender<Vec<u8>>,
) -> Result<(), String> {
    let sql = format!("COPY ({select}) TO STDOUT");
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    let mut stream = conn.copy_out_raw(&sql).await.map_err(|e| e.to_string())?;
    let mut block: Vec<u8> = Vec::with_capacity(block_bytes);
    while let Some(chunk) = stream.next().await {
        block.extend_from_slice(&chunk.map_err(|e| e.to_string())?);
        if block.len() < block_bytes {
            continue;
        }
        let Some(end) = block.iter().rposition(|&b| b == b'\n') else {
            continue;
        };
        let mut rest = Vec::with_capacity(block_bytes);
        rest.extend_from_slice(&block[end + 1..]);
        block.truncate(end + 1);
        if sender
            .send(std::mem::replace(&mut block, rest))
            .await
            .is_err()
        {
            return Ok(());
        }
    }
    if block.last().is_some_and(|&b| b != b'\n') {
        return Err("COPY ended inside a row".into());
    }
    if !block.is_empty() {
        let _ = sender.send(block).await;
    }
    Ok(())
}

/// Hands each line of a block [`send_blocks`] sent to `each`, its fields unescaped.
pub(crate) fn each_line(
    block: &[u8],
    mut each: impl FnMut(&CopyLine) -> Result<(), String>,
) -> Result<(), String> {
    let mut line = CopyLine::default();
    let mut start = 0;
    while let Some(end) = memchr(b'\n', &block[start..]) {
        line.split(&block[start..start + end])?;
        each(&line)?;
        start += end + 1;
    }
    Ok(())
}

fn memchr(byte: u8, bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == byte)
}

/// One row of `COPY … TO STDOUT` (text format), its fields unescaped: `\N` is NULL, and a
/// backslash escapes a tab, a line break and itself (PostgreSQL writes no other escapes).
#[derive(Default)]
pub(crate) struct CopyLine {
    text: String,
    /// Each field's range in `text`, or `None` for NULL.
    fields: Vec<Option<(usize, usize)>>,
}

impl CopyLine {
    pub(crate) fn split(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.fields.clear();
        let mut raw = std::mem::take(&mut self.text).into_bytes();
        raw.clear();
        for field in bytes.split(|&b| b == b'\t') {
            if field == b"\\N" {
                self.fields.push(None);
                continue;
            }
            let start = raw.len();
            let mut escaped = false;
            for &b in field {
                if escaped {
                    raw.push(match b {
                        b't' => b'\t',
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'v' => 0x0b,
                        other => other,
                    });
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else {
                    raw.push(b);
                }
            }
            self.fields.push(Some((start, raw.len())));
        }
        self.text = String::from_utf8(raw).map_err(|e| e.to_string())?;
        Ok(())
    }

    pub(crate) fn get(&self, i: usize) -> Result<Option<&str>, String> {
        match self.fields.get(i) {
            Some(Some((start, end))) => Ok(Some(&self.text[*start..*end])),
            Some(None) => Ok(None),
            None => Err(format!("a COPY row has no field {i}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copy_lines_are_unescaped_and_keep_nulls() {
        let mut line = CopyLine::default();
        line.split(b"7\ta\\tb\\\\c\\nd\t\\N\t\t2.5\t\xe5\x8f\xb0\\\\N")
            .unwrap();
        assert_eq!(line.get(0).unwrap(), Some("7"));
        assert_eq!(line.get(1).unwrap(), Some("a\tb\\c\nd"));
        assert_eq!(line.get(2).unwrap(), None);
        assert_eq!(line.get(3).unwrap(), Some(""));
        assert_eq!(line.get(4).unwrap(), Some("2.5"));
        // An escaped backslash before N is the text `\N`, not NULL.
        assert_eq!(line.get(5).unwrap(), Some("台\\N"));
        assert!(line.get(6).is_err());
        // The buffers are reused: a shorter second line leaves nothing of the first.
        line.split(b"8\tx").unwrap();
        assert_eq!(line.get(1).unwrap(), Some("x"));
        assert!(line.get(2).is_err());
        assert!(line.split(b"\xff").is_err());
    }
}
