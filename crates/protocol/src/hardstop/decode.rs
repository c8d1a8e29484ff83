//! Encodings a reader undoes before acting: percent-encoding (`rm%20-rf`,
//! as in a URL) and HTML character references (`rm&#32;-rf`, `&#x72;m`,
//! `curl x &#124; sh`). A hard stop looks at the decoded text too, so what
//! an agent or a browser would turn back into a command is matched as that
//! command.

/// `text` with percent-encodings and HTML character references decoded,
/// repeatedly (`%2526` is `%26` is `&`), or `None` when it holds neither.
pub(super) fn decoded(text: &str) -> Option<String> {
    if !text.contains(['%', '&', '$', '<', '`', '^']) {
        return None;
    }
    let mut current: Option<String> = ansi_c_strings(text);
    // PowerShell's backtick and cmd's caret escape the next character
    // (``Re`move-Item``, `r^d`): between two letters they are nothing.
    if let Some(unescaped) = escapes_between_letters(current.as_deref().unwrap_or(text)) {
        current = Some(unescaped);
    }
    // Inline HTML tags inside a word (`r<b></b>m`) are nothing to a reader.
    if let Some(untagged) = current
        .as_deref()
        .unwrap_or(text)
        .contains("</")
        .then(|| without_tags(current.as_deref().unwrap_or(text)))
    {
        current = Some(untagged);
    }
    // Three rounds undo double and triple encodings; more is not text a
    // person or an agent reads as a command.
    for _ in 0..5 {
        let source = current.as_deref().unwrap_or(text);
        let next = percent(source).or_else(|| entities(source));
        match next {
            Some(next) => current = Some(next),
            None => break,
        }
    }
    current
}

/// `text` without the backticks and carets that stand between two letters.
fn escapes_between_letters(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let any = bytes.windows(3).any(|w| {
        matches!(w[1], b'`' | b'^')
            && w[0].is_ascii_alphanumeric()
            && (w[2].is_ascii_alphanumeric() || w[2] == b'-')
    });
    if !any && text.is_ascii() {
        return None;
    }
    let chars: Vec<char> = text.chars().collect();
    let escape = |at: usize| {
        matches!(chars[at], '`' | '^')
            && at > 0
            && chars[at - 1].is_alphanumeric()
            && chars
                .get(at + 1)
                .is_some_and(|c| c.is_alphanumeric() || *c == '-')
    };
    if !(0..chars.len()).any(escape) {
        return None;
    }
    Some(
        (0..chars.len())
            .filter(|&at| !escape(at))
            .map(|at| chars[at])
            .collect(),
    )
}

/// `text` with bash's ANSI-C strings (`$'\x72m'`) written out, if it has
/// one.
fn ansi_c_strings(text: &str) -> Option<String> {
    if !text.contains("$'") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("$'") {
        out.push_str(&rest[..at]);
        let quoted = &rest[at + 2..];
        let end = quoted.find('\'').unwrap_or(quoted.len());
        out.push_str(&super::shell::ansi_c(&quoted[..end]));
        rest = quoted.get(end + 1..).unwrap_or("");
    }
    out.push_str(rest);
    Some(out)
}

/// Percent-decoded `text` (invalid UTF-8 replaced), if it has a `%XX`.
fn percent(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let hex = |b: u8| (b as char).to_digit(16).map(|d| d as u8);
    let at =
        |i: usize| -> Option<u8> { Some(hex(*bytes.get(i + 1)?)? * 16 + hex(*bytes.get(i + 2)?)?) };
    if !bytes
        .iter()
        .enumerate()
        .any(|(i, b)| *b == b'%' && at(i).is_some())
    {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], at(i)) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// `text` with HTML character references decoded, if it has one.
fn entities(text: &str) -> Option<String> {
    if !text.contains('&') {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let mut changed = false;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        match reference(rest) {
            Some((c, len)) => {
                out.push(c);
                rest = &rest[len..];
                changed = true;
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    // Escaped text inside HTML (`<pre><code>…&#124; sh</code></pre>`):
    // the tags go too, as a reader of the page sees none of them.
    if changed && out.contains("</") {
        out = without_tags(&out);
    }
    changed.then_some(out)
}

/// `text` with HTML tags (`<code>`, `</pre>`, `<br/>`) made line breaks.
fn without_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let is_tag = after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '/');
        match after.find('>').filter(|_| is_tag) {
            Some(end) => {
                // An inline tag joins what is around it (`r<b></b>m`).
                let name = after[..end].trim_start_matches('/');
                let inline = [
                    "b", "i", "em", "strong", "span", "u", "s", "mark", "a ", "a",
                ]
                .iter()
                .any(|t| name == *t || name.starts_with(&format!("{t} ")));
                if !inline {
                    out.push('\n');
                }
                rest = &after[end + 1..];
            }
            None => {
                out.push('<');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The character `text` (starting at `&`) refers to and the length of the
/// reference. The `;` may be missing, as browsers allow.
fn reference(text: &str) -> Option<(char, usize)> {
    let body = &text[1..];
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '#'))
        .unwrap_or(body.len())
        .min(32);
    let name = &body[..end];
    let len = 1 + end + usize::from(body[end..].starts_with(';'));
    let c = if let Some(number) = name.strip_prefix('#') {
        let value = match number.strip_prefix(['x', 'X']) {
            Some(hex) => u32::from_str_radix(hex, 16).ok()?,
            None => number.parse().ok()?,
        };
        char::from_u32(value)?
    } else {
        // Without its `;` only the oldest names are references (`&amp`,
        // `&lt`); `|&dash` is a pipe into `dash`, not a hyphen.
        let lower = name.to_ascii_lowercase();
        let terminated = body[end..].starts_with(';');
        if !terminated && !matches!(lower.as_str(), "amp" | "lt" | "gt" | "quot" | "nbsp") {
            return None;
        }
        named(&lower)?
    };
    Some((c, len))
}

/// The named references a command can be spelled with.
fn named(name: &str) -> Option<char> {
    Some(match name {
        "amp" => '&',
        "lt" => '<',
        "gt" => '>',
        "quot" => '"',
        "apos" => '\'',
        "nbsp" => ' ',
        "sol" => '/',
        "bsol" => '\\',
        "verbar" | "vert" | "verticalline" | "vbar" => '|',
        "lpar" => '(',
        "rpar" => ')',
        "lcub" | "lbrace" => '{',
        "rcub" | "rbrace" => '}',
        "lsqb" | "lbrack" => '[',
        "rsqb" | "rbrack" => ']',
        "semi" => ';',
        "colon" => ':',
        "excl" => '!',
        "num" => '#',
        "dollar" => '$',
        "percnt" => '%',
        "ast" | "midast" => '*',
        "plus" => '+',
        "comma" => ',',
        "period" => '.',
        "equals" => '=',
        "quest" => '?',
        "commat" => '@',
        "lowbar" => '_',
        "grave" => '`',
        "tilde" => '~',
        "hyphen" | "dash" | "minus" => '-',
        "newline" => '\n',
        "tab" => '\t',
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::decoded;

    #[test]
    fn undoes_percent_and_entities() {
        assert_eq!(decoded("rm%20-rf%20%2F").as_deref(), Some("rm -rf /"));
        assert_eq!(decoded("rm&#32;-rf").as_deref(), Some("rm -rf"));
        assert_eq!(decoded("&#x72;m -rf").as_deref(), Some("rm -rf"));
        assert_eq!(decoded("curl x &#124; sh").as_deref(), Some("curl x | sh"));
        assert_eq!(
            decoded("curl x &verbar; sh").as_deref(),
            Some("curl x | sh")
        );
        assert_eq!(decoded("rm%2520-rf").as_deref(), Some("rm -rf"));
        assert_eq!(decoded("a &amp;&amp; b").as_deref(), Some("a && b"));
        assert_eq!(decoded("plain text"), None);
        assert_eq!(decoded("50% of it & more"), None);
    }
}
