//! The smallest HTTP/1.1 client the `opencode` doorbell needs: one request
//! per connection (`Connection: close`) to a plain `http://host:port`, and
//! an answer read under a deadline and a size cap. The server is another
//! program, so its answer is untrusted: a slow, endless or malformed one is
//! an error, never a hang or an allocation it chose.
//!
//! Bodies come with `Content-Length` (what `opencode serve` 1.18 sent in
//! every answer seen), chunked (`Transfer-Encoding: chunked`, RFC 9112
//! §7.1, which any HTTP/1.1 server or proxy in front of it may choose) or
//! until the connection closes.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

/// The largest body read; a list of sessions is a few kilobytes.
pub(crate) const BODY_LIMIT: usize = 1 << 20;
/// The largest status line or header line, and the most header lines.
const LINE_LIMIT: usize = 16 * 1024;
const HEADER_LINES: usize = 100;

/// What was asked.
pub struct Request<'a> {
    pub method: &'a str,
    /// Path and query, already percent-encoded.
    pub target: &'a str,
    /// `host:port`, for the connection and the `Host` header.
    pub host: &'a str,
    /// Extra headers; names and values must not hold CR or LF.
    pub headers: &'a [(&'a str, &'a str)],
    /// A JSON body, if any.
    pub json: Option<&'a str>,
}

/// What came back.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Why there is no [`Response`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum HttpError {
    #[error("cannot reach it")]
    Io(#[from] io::Error),
    #[error("no answer within {}s", .0.as_secs())]
    TimedOut(Duration),
    #[error("its answer is larger than {} bytes", BODY_LIMIT)]
    TooLarge,
    #[error("its answer is not HTTP: {0}")]
    Malformed(&'static str),
}

/// Sends `request` and reads the answer, all within `timeout`.
pub(crate) fn send(request: &Request<'_>, timeout: Duration) -> Result<Response, HttpError> {
    let until = Instant::now() + timeout;
    let addr = resolve(request.host)?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(encode(request).as_bytes())?;
    let mut reader = BufReader::new(Deadline {
        stream,
        until,
        timeout,
    });
    read_response(&mut reader, request.method == "HEAD").map_err(|e| match e {
        HttpError::Io(io) if matches!(io.kind(), io::ErrorKind::TimedOut) => {
            HttpError::TimedOut(timeout)
        }
        HttpError::Io(io) if io.kind() == io::ErrorKind::WouldBlock => HttpError::TimedOut(timeout),
        other => other,
    })
}

fn resolve(host: &str) -> io::Result<SocketAddr> {
    if let Ok(addr) = host.parse::<SocketAddr>() {
        return Ok(addr);
    }
    host.to_socket_addrs()?
        .next()
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address"))
}

/// The request's bytes.
fn encode(request: &Request<'_>) -> String {
    let mut text = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: aea/{}\r\n",
        request.method,
        request.target,
        request.host,
        env!("CARGO_PKG_VERSION")
    );
    for (name, value) in request.headers {
        debug_assert!(!format!("{name}{value}").contains(['\r', '\n']));
        let _ = write!(text, "{name}: {value}\r\n");
    }
    if let Some(json) = request.json {
        let _ = write!(
            text,
            "Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{json}",
            json.len()
        );
    } else {
        text.push_str("\r\n");
    }
    text
}

/// A stream whose every read waits at most until one deadline for the
/// whole answer: a server that sends a byte every few seconds cannot keep
/// the doorbell waiting past it.
struct Deadline {
    stream: TcpStream,
    until: Instant,
    timeout: Duration,
}

impl Read for Deadline {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {}s", self.timeout.as_secs()),
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// Reads one answer: status line, headers, body. `head_only` for a HEAD
/// request, whose answer has no body whatever its headers say.
pub(crate) fn read_response(
    reader: &mut impl BufRead,
    head_only: bool,
) -> Result<Response, HttpError> {
    let (status, headers) = loop {
        let (status, headers) = read_head(reader)?;
        // 1xx answers are interim (RFC 9110 §15.2): the real one follows.
        if !(100..200).contains(&status) || status == 101 {
            break (status, headers);
        }
    };
    let header = |name| values(&headers, name);
    let body = if head_only || status == 204 || status == 304 || (100..200).contains(&status) {
        Vec::new()
    } else if header("transfer-encoding").any(|v| {
        v.split(',')
            .any(|coding| coding.trim().eq_ignore_ascii_case("chunked"))
    }) {
        // Chunked wins over any Content-Length (RFC 9112 §6.3).
        read_chunked(reader)?
    } else {
        let mut lengths = header("content-length");
        match (lengths.next(), lengths.next()) {
            (Some(first), second) => {
                let length = parse_length(first)?;
                if second.is_some_and(|s| parse_length(s).ok() != Some(length)) {
                    return Err(HttpError::Malformed("conflicting Content-Length headers"));
                }
                read_exact_body(reader, length)?
            }
            (None, _) => read_to_close(reader)?,
        }
    };
    Ok(Response { status, body })
}

/// The values of header `name`, in order.
fn values<'h>(headers: &'h [(String, String)], name: &'h str) -> impl Iterator<Item = &'h str> {
    headers
        .iter()
        .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

fn read_head(reader: &mut impl BufRead) -> Result<(u16, Vec<(String, String)>), HttpError> {
    let status_line = read_line(reader)?.ok_or(HttpError::Malformed("no status line"))?;
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    let code = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed("the status line is not HTTP/1.x"));
    }
    let status = match code.parse::<u16>() {
        Ok(n) if code.len() == 3 && (100..600).contains(&n) => n,
        _ => return Err(HttpError::Malformed("the status code is not a number")),
    };
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or(HttpError::Malformed("the headers end early"))?;
        if line.is_empty() {
            return Ok((status, headers));
        }
        if headers.len() == HEADER_LINES {
            return Err(HttpError::Malformed("too many headers"));
        }
        let (name, value) = line
            .split_once(':')
            .ok_or(HttpError::Malformed("a header line without a colon"))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
}

/// One line without its CRLF (a bare LF is accepted too); `None` at the
/// end of the stream. Lines longer than [`LINE_LIMIT`] are an error.
fn read_line(reader: &mut impl BufRead) -> Result<Option<String>, HttpError> {
    let mut line = Vec::new();
    let n = reader
        .take(LINE_LIMIT as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    if line.last() != Some(&b'\n') {
        return Err(if n > LINE_LIMIT {
            HttpError::Malformed("a line is too long")
        } else {
            HttpError::Malformed("the answer ends inside a line")
        });
    }
    line.pop();
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| HttpError::Malformed("a header line is not UTF-8"))
}

fn parse_length(text: &str) -> Result<usize, HttpError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(HttpError::Malformed("Content-Length is not a number"));
    }
    // A number too large for usize is too large for the cap as well.
    Ok(text.parse().unwrap_or(usize::MAX))
}

fn read_exact_body(reader: &mut impl BufRead, length: usize) -> Result<Vec<u8>, HttpError> {
    if length > BODY_LIMIT {
        return Err(HttpError::TooLarge);
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).map_err(|e| match e.kind() {
        io::ErrorKind::UnexpectedEof => HttpError::Malformed("the body is shorter than announced"),
        _ => HttpError::Io(e),
    })?;
    Ok(body)
}

fn read_to_close(reader: &mut impl BufRead) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    reader.take(BODY_LIMIT as u64 + 1).read_to_end(&mut body)?;
    if body.len() > BODY_LIMIT {
        return Err(HttpError::TooLarge);
    }
    Ok(body)
}

/// A chunked body (RFC 9112 §7.1): `<hex size>[;ext]` CRLF, data, CRLF,
/// …, `0` CRLF, trailer lines, CRLF.
fn read_chunked(reader: &mut impl BufRead) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or(HttpError::Malformed("the body ends early"))?;
        let size = line.split(';').next().unwrap_or_default().trim();
        if size.is_empty() || size.len() > 8 || !size.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(HttpError::Malformed("a chunk size is not hexadecimal"));
        }
        let size = usize::from_str_radix(size, 16)
            .map_err(|_| HttpError::Malformed("a chunk size is not hexadecimal"))?;
        if size == 0 {
            break;
        }
        if body.len() + size > BODY_LIMIT {
            return Err(HttpError::TooLarge);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader
            .read_exact(&mut body[start..])
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => {
                    HttpError::Malformed("the body ends inside a chunk")
                }
                _ => HttpError::Io(e),
            })?;
        if read_line(reader)? != Some(String::new()) {
            return Err(HttpError::Malformed("a chunk does not end with CRLF"));
        }
    }
    // Trailer fields, up to the empty line; a server that closes right
    // after the last chunk is forgiven.
    for _ in 0..=HEADER_LINES {
        match read_line(reader)? {
            None => return Ok(body),
            Some(line) if line.is_empty() => return Ok(body),
            Some(_) => {}
        }
    }
    Err(HttpError::Malformed("too many trailer lines"))
}

/// `Basic <base64(user:password)>` (RFC 7617).
pub(crate) fn basic_auth(user: &str, password: &str) -> String {
    format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
}

/// Standard base64 with padding (RFC 4648 §4): a dozen lines instead of a
/// dependency, for one header.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i)) as usize & 63]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// `text` percent-encoded for a query value: everything but RFC 3986's
/// unreserved characters and `/` (which a path keeps readable).
pub(crate) fn percent_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use std::net::TcpListener;

    fn parse(raw: &[u8]) -> Result<Response, HttpError> {
        read_response(&mut Cursor::new(raw), false)
    }

    #[test]
    fn base64_and_basic_auth_follow_the_rfcs() {
        // RFC 4648 §10 test vectors.
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded, "{plain}");
        }
        // RFC 7617 §2's example.
        assert_eq!(
            basic_auth("Aladdin", "open sesame"),
            "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        // A colon in the password is kept: only the first one splits.
        assert_eq!(basic_auth("opencode", "a:b"), "Basic b3BlbmNvZGU6YTpi");
    }

    #[test]
    fn percent_encoding_keeps_slashes_and_escapes_the_rest() {
        assert_eq!(
            percent_encode("/home/me/my repo&x=1?#ü".as_bytes()),
            "/home/me/my%20repo%26x%3D1%3F%23%C3%BC"
        );
    }

    #[test]
    fn bodies_by_length_chunks_or_close() {
        let r = parse(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloEXTRA").unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        let r = parse(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n4;ext=1\r\n[{\"a\r\nA\r\n\":1},{}]  \r\n0\r\nX-Trailer: t\r\n\r\n",
        )
        .unwrap();
        assert_eq!(r.body, b"[{\"a\":1},{}]  ");
        // Chunked, then the server closes without the final CRLF.
        let r =
            parse(b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, CHUNKED\r\n\r\n2\r\nok\r\n0\r\n")
                .unwrap();
        assert_eq!(r.body, b"ok");
        let r = parse(b"HTTP/1.0 200 OK\nServer: x\n\nuntil close").unwrap();
        assert_eq!(r.body, b"until close");
        let r = parse(
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.body.len()), (204, 0));
        let r = read_response(
            &mut Cursor::new(&b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 10\r\n\r\n"[..]),
            true,
        )
        .unwrap();
        assert_eq!(r.status, 401);
    }

    #[test]
    fn oversized_and_malformed_answers_are_errors() {
        let too_large = [
            format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
                BODY_LIMIT + 1
            ),
            "HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n".to_string(),
            format!(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
                BODY_LIMIT + 1
            ),
        ];
        for raw in &too_large {
            assert!(
                matches!(parse(raw.as_bytes()), Err(HttpError::TooLarge)),
                "{raw}"
            );
        }
        let mut endless = b"HTTP/1.1 200 OK\r\n\r\n".to_vec();
        endless.resize(BODY_LIMIT + 100, b'x');
        assert!(matches!(parse(&endless), Err(HttpError::TooLarge)));
        let mut many_chunks = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..=(BODY_LIMIT / 0x8000) {
            many_chunks.extend_from_slice(b"8000\r\n");
            many_chunks.resize(many_chunks.len() + 0x8000, b'x');
            many_chunks.extend_from_slice(b"\r\n");
        }
        assert!(matches!(parse(&many_chunks), Err(HttpError::TooLarge)));

        for raw in [
            &b""[..],
            b"SSH-2.0-OpenSSH\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nno colon\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX: never ends",
        ] {
            assert!(
                matches!(parse(raw), Err(HttpError::Malformed(_))),
                "{:?}: {:?}",
                String::from_utf8_lossy(raw),
                parse(raw)
            );
        }
        let long_line = format!("HTTP/1.1 200 OK\r\nX: {}\r\n\r\n", "a".repeat(LINE_LIMIT));
        assert!(matches!(
            parse(long_line.as_bytes()),
            Err(HttpError::Malformed(_))
        ));
    }

    #[test]
    fn a_server_that_trickles_its_answer_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            // One byte every 100 ms: each read gets something, the answer
            // never ends.
            for _ in 0..40 {
                if stream.write_all(b"H").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        let started = Instant::now();
        let request = Request {
            method: "GET",
            target: "/session",
            host: &host,
            headers: &[],
            json: None,
        };
        let err = send(&request, Duration::from_millis(500)).unwrap_err();
        assert!(matches!(err, HttpError::TimedOut(_)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
        server.join().unwrap();
    }
}
