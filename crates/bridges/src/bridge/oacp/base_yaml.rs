//! YAML as OACP reads its message files: PyYAML's `BaseLoader`
//! (oacp-cli 0.5.4, `_oacp_yaml.load_yaml_mapping(string_scalars=True)`,
//! used by `validate_message.py` and `oacp_inbox.py`).
//!
//! Every scalar is the text written: `yes`, `0x1F`, `1.10`, `~` and an
//! empty value are text, not a boolean, a number or null; a tag (`!!binary`,
//! `!!int`, `!!python/object:…`) changes nothing; `<<` is a key like any
//! other, not a merge. A general-purpose YAML reader (serde-saphyr's
//! `Value`) decodes `!!binary`, turns `0x1F` into `31` and merges `<<`, so
//! aea would show a message other than the one OACP's reader, and the
//! signature on the file, vouch for. Stricter than PyYAML where PyYAML
//! silently picks: a key given twice, or a key that is not text, is
//! refused. Aliases may repeat no more than the file itself holds, so a
//! small file never becomes a huge message (OACP never writes one).

use std::collections::HashMap;

use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

/// Deeper than any message may be (32): refused before it is built.
const MAX_DEPTH: usize = 64;

enum Open {
    List(Vec<Value>, usize),
    Mapping(Map<String, Value>, Option<String>, usize),
}

/// The document in `text`, every scalar a string.
pub(super) fn load(text: &str) -> Result<Value, String> {
    // YAML 1.1 (OACP's reader) ends a line at these, YAML 1.2 (ours) does
    // not: in a block scalar or a comment they would hide from one reader
    // fields the other sees. Quoted, they are written escaped.
    if let Some(c) = text
        .chars()
        .find(|c| matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}'))
    {
        return Err(format!(
            "holds a line break only YAML 1.1 knows (U+{:04X}) outside an escape: \
             OACP's reader and aea's would read different fields",
            c as u32
        ));
    }
    let mut open: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Value> = HashMap::new();
    let mut root = None;
    let mut documents = 0;
    // What aliases may add, in nodes and bytes of text.
    let mut budget = text.len();
    for event in Parser::new_from_str(text) {
        let (event, span) = event.map_err(|e| e.to_string())?;
        let node = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err("more than one YAML document".into());
                }
                continue;
            }
            Event::Scalar(value, style, anchor, _) => {
                // A value left out is read as `~`; to OACP it is empty text.
                let empty = style == ScalarStyle::Plain && span.start.index() == span.end.index();
                let value = if empty {
                    String::new()
                } else {
                    value.into_owned()
                };
                named(&mut anchors, anchor, Value::String(value))
            }
            Event::Alias(id) => {
                let node = anchors
                    .get(&id)
                    .ok_or("an alias names no anchor finished before it")?
                    .clone();
                budget = budget
                    .checked_sub(size(&node))
                    .ok_or("its aliases repeat more than the file holds")?;
                node
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                if open.len() >= MAX_DEPTH {
                    return Err(format!("nested deeper than {MAX_DEPTH} levels"));
                }
                open.push(match event {
                    Event::SequenceStart(..) => Open::List(Vec::new(), anchor),
                    _ => Open::Mapping(Map::new(), None, anchor),
                });
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => match open.pop() {
                Some(Open::List(items, anchor)) => named(&mut anchors, anchor, Value::Array(items)),
                Some(Open::Mapping(map, None, anchor)) => {
                    named(&mut anchors, anchor, Value::Object(map))
                }
                Some(Open::Mapping(_, Some(key), _)) => {
                    return Err(format!("key {key:?} has no value"));
                }
                None => return Err("a collection ends that never began".into()),
            },
            _ => continue,
        };
        match open.last_mut() {
            None if root.is_none() => root = Some(node),
            None => return Err("more than one YAML document".into()),
            Some(Open::List(items, _)) => items.push(node),
            Some(Open::Mapping(map, key @ None, _)) => {
                let Value::String(name) = node else {
                    return Err("a mapping key is not text".into());
                };
                if map.contains_key(&name) {
                    return Err(format!("duplicate mapping key {name:?}"));
                }
                *key = Some(name);
            }
            Some(Open::Mapping(map, key, _)) => {
                let name = key.take().expect("matched Some above");
                map.insert(name, node);
            }
        }
    }
    Ok(root.unwrap_or(Value::Null))
}

fn named(anchors: &mut HashMap<usize, Value>, anchor: usize, node: Value) -> Value {
    if anchor != 0 {
        anchors.insert(anchor, node.clone());
    }
    node
}

/// Nodes and bytes of text: what an alias of `node` adds to the message.
fn size(node: &Value) -> usize {
    match node {
        Value::String(s) => 1 + s.len(),
        Value::Array(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Object(map) => 1 + map.iter().map(|(k, v)| k.len() + size(v)).sum::<usize>(),
        _ => 1,
    }
}
