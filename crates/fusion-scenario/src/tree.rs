//! The parsed document as a tree that remembers, for every key and value,
//! where it was written and where it came from (the file, a `--set`
//! override, or a variant's `set`). Overrides are applied to this tree, so
//! values the user never touched keep their exact file positions and values
//! that were overridden are reported against the override.

use std::fmt;
use std::ops::Range;
use std::rc::Rc;

use toml_edit::{Item, Value};

pub(crate) type Span = Option<Range<usize>>;

/// Where a key or value came from.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Origin {
    /// Written in the file at its span.
    File,
    /// `--set KEY=VALUE` (the text is `KEY=VALUE`); it has no file position.
    Set(Rc<str>),
    /// A variant's `set` table (the name); the span points at the value in that table.
    Variant(Rc<str>),
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub val: Val,
    pub span: Span,
    pub origin: Origin,
}

#[derive(Clone, Debug)]
pub(crate) enum Val {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    Datetime(String),
    Array(Vec<Node>),
    Table(Table),
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Table {
    pub entries: Vec<Entry>,
    /// Made by a dotted key (`a.b = 1`) rather than written as a table.
    pub dotted: bool,
    /// Written inline (`{ ... }`).
    pub inline: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub key: String,
    pub key_span: Span,
    pub key_origin: Origin,
    pub node: Node,
}

impl Table {
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }
}

impl Node {
    pub fn as_table(&self) -> Option<&Table> {
        match &self.val {
            Val::Table(t) => Some(t),
            _ => None,
        }
    }

    /// This node and everything below it now come from `origin`.
    pub fn set_origin(&mut self, origin: &Origin) {
        self.origin = origin.clone();
        match &mut self.val {
            Val::Array(items) => items.iter_mut().for_each(|n| n.set_origin(origin)),
            Val::Table(t) => {
                for e in &mut t.entries {
                    e.key_origin = origin.clone();
                    e.node.set_origin(origin);
                }
            }
            _ => {}
        }
    }

    /// The value as a user would read it in a message.
    pub fn describe(&self) -> String {
        match &self.val {
            Val::Int(n) => n.to_string(),
            Val::Float(f) => format_float(*f),
            Val::Bool(b) => b.to_string(),
            Val::Str(s) => {
                let short: String = s.chars().take(60).collect();
                if short.len() < s.len() {
                    format!("{:?}...", short)
                } else {
                    format!("{s:?}")
                }
            }
            Val::Datetime(d) => format!("the date-time {d}"),
            Val::Array(_) => "an array".to_string(),
            Val::Table(_) => "a table".to_string(),
        }
    }

    /// The element name of an array-of-tables entry (`name = "..."`).
    pub fn name(&self) -> Option<&str> {
        match &self.as_table()?.get("name")?.node.val {
            Val::Str(s) => Some(s),
            _ => None,
        }
    }
}

pub(crate) fn format_float(f: f64) -> String {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 1e15 {
        format!("{f:.1}")
    } else {
        f.to_string()
    }
}

/// Convert a parsed `toml_edit` document item (with spans) into a tree.
pub(crate) fn from_item(item: &Item) -> Option<Node> {
    match item {
        Item::None => None,
        Item::Value(v) => Some(from_value(v)),
        Item::Table(t) => {
            let entries = t
                .iter()
                .filter_map(|(k, v)| {
                    let mut node = from_item(v)?;
                    let key_span = t.key(k).and_then(|k| k.span());
                    if node.span.is_none() {
                        // Implicit tables (`[a.b]` without `[a]`) have no span of their own.
                        node.span = key_span.clone();
                    }
                    Some(Entry {
                        key: k.to_string(),
                        key_span,
                        key_origin: Origin::File,
                        node,
                    })
                })
                .collect();
            Some(Node {
                val: Val::Table(Table {
                    entries,
                    dotted: t.is_dotted(),
                    inline: false,
                }),
                span: t.span(),
                origin: Origin::File,
            })
        }
        Item::ArrayOfTables(a) => {
            let items = a
                .iter()
                .filter_map(|t| from_item(&Item::Table(t.clone())))
                .collect();
            Some(Node {
                val: Val::Array(items),
                span: a.span(),
                origin: Origin::File,
            })
        }
    }
}

pub(crate) fn from_value(v: &Value) -> Node {
    let val = match v {
        Value::String(s) => Val::Str(s.value().clone()),
        Value::Integer(n) => Val::Int(*n.value()),
        Value::Float(f) => Val::Float(*f.value()),
        Value::Boolean(b) => Val::Bool(*b.value()),
        Value::Datetime(d) => Val::Datetime(d.value().to_string()),
        Value::Array(a) => Val::Array(a.iter().map(from_value).collect()),
        Value::InlineTable(t) => Val::Table(Table {
            entries: t
                .iter()
                .map(|(k, v)| Entry {
                    key: k.to_string(),
                    key_span: t.key(k).and_then(|k| k.span()),
                    key_origin: Origin::File,
                    node: from_value(v),
                })
                .collect(),
            dotted: t.is_dotted(),
            inline: true,
        }),
    };
    Node {
        val,
        span: v.span(),
        origin: Origin::File,
    }
}

/// A key path for messages: `phase[1].fault[0].workers`.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct KeyPath(Vec<Seg>);

#[derive(Clone, Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

impl KeyPath {
    pub fn root() -> Self {
        KeyPath(Vec::new())
    }
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

fn is_bare_key(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    if is_bare_key(k) {
                        f.write_str(k)?
                    } else {
                        write!(f, "{k:?}")?
                    }
                }
            }
        }
        Ok(())
    }
}

/// Split `KEY=VALUE` at the first `=` outside double quotes.
pub(crate) fn split_assignment(text: &str) -> Option<(&str, &str)> {
    let mut quoted = false;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            '=' if !quoted => return Some((&text[..i], &text[i + 1..])),
            _ => {}
        }
    }
    None
}

/// Parse a dotted key path: segments separated by `.`, each bare or in
/// double quotes (`phase."warm.up".duration_s`).
pub(crate) fn parse_path(text: &str) -> Result<Vec<String>, String> {
    let mut segs = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut seg = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next() {
                        Some(e) => seg.push(e),
                        None => break,
                    },
                    c => seg.push(c),
                }
            }
            if !closed {
                return Err("unterminated quoted key segment".to_string());
            }
            while chars.peek().is_some_and(|c| c.is_whitespace()) {
                chars.next();
            }
            match chars.peek() {
                None | Some('.') => {}
                Some(c) => return Err(format!("unexpected `{c}` after a quoted key segment")),
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == '.' {
                    break;
                }
                if c == '"' {
                    return Err("a quote may only open a key segment".to_string());
                }
                seg.push(c);
                chars.next();
            }
            let trimmed = seg.trim();
            if trimmed.is_empty() {
                return Err(
                    "empty key segment (two dots in a row, or a dot at an end?)".to_string()
                );
            }
            seg = trimmed.to_string();
        }
        segs.push(seg);
        match chars.next() {
            None => return Ok(segs),
            Some('.') => {}
            Some(c) => return Err(format!("unexpected `{c}` in key path")),
        }
    }
}

/// Parse an override's VALUE: a TOML value, or else the text as a string.
pub(crate) fn parse_value(text: &str) -> Node {
    let t = text.trim();
    match t.parse::<Value>() {
        Ok(v) => {
            let mut n = from_value(&v);
            strip_spans(&mut n);
            n
        }
        Err(_) => Node {
            val: Val::Str(t.to_string()),
            span: None,
            origin: Origin::File,
        },
    }
}

fn strip_spans(n: &mut Node) {
    n.span = None;
    match &mut n.val {
        Val::Array(items) => items.iter_mut().for_each(strip_spans),
        Val::Table(t) => {
            for e in &mut t.entries {
                e.key_span = None;
                strip_spans(&mut e.node);
            }
        }
        _ => {}
    }
}

/// Store `value` at the path `segs` below `root`. Tables along the path that
/// do not exist are created; array elements are found by their `name` or by
/// their 0-based position and must exist. `span` is where the override was
/// written (a variant's `set` key) for the keys it creates. Returns the path
/// of the value in message form.
pub(crate) fn set_path(
    root: &mut Node,
    segs: &[String],
    value: Node,
    origin: &Origin,
    span: &Span,
) -> Result<KeyPath, String> {
    set_in(root, &KeyPath::root(), segs, value, origin, span)
}

fn set_in(
    node: &mut Node,
    here: &KeyPath,
    segs: &[String],
    mut value: Node,
    origin: &Origin,
    span: &Span,
) -> Result<KeyPath, String> {
    let Some((seg, rest)) = segs.split_first() else {
        return Err("empty key path".to_string());
    };
    let describe = node.describe();
    match &mut node.val {
        Val::Table(t) => {
            let path = here.key(seg);
            let pos = match t.entries.iter().position(|e| e.key == *seg) {
                Some(i) => i,
                None => {
                    t.entries.push(Entry {
                        key: seg.clone(),
                        key_span: span.clone(),
                        key_origin: origin.clone(),
                        node: Node {
                            val: Val::Table(Table::default()),
                            span: span.clone(),
                            origin: origin.clone(),
                        },
                    });
                    t.entries.len() - 1
                }
            };
            let Some(entry) = t.entries.get_mut(pos) else {
                return Err(format!("internal error: lost the entry `{path}`"));
            };
            if rest.is_empty() {
                value.set_origin(origin);
                entry.node = value;
                Ok(path)
            } else {
                set_in(&mut entry.node, &path, rest, value, origin, span)
            }
        }
        Val::Array(items) => {
            let Some(i) = find_element(items, seg) else {
                return Err(missing_element(here, items, seg));
            };
            let path = here.index(i);
            let Some(item) = items.get_mut(i) else {
                return Err(missing_element(here, &[], seg));
            };
            if rest.is_empty() {
                value.set_origin(origin);
                *item = value;
                Ok(path)
            } else {
                set_in(item, &path, rest, value, origin, span)
            }
        }
        _ => Err(format!(
            "`{here}` is {describe}, not a table, so it has no key `{seg}`"
        )),
    }
}

/// An element of an array by its `name`, else by its 0-based position.
fn find_element(items: &[Node], seg: &str) -> Option<usize> {
    items
        .iter()
        .position(|n| n.name() == Some(seg))
        .or_else(|| seg.parse::<usize>().ok().filter(|&i| i < items.len()))
}

fn missing_element(array: &KeyPath, items: &[Node], seg: &str) -> String {
    if items.is_empty() {
        return format!("`{array}` has no elements, so there is no `{seg}`");
    }
    let list: Vec<String> = items
        .iter()
        .enumerate()
        .map(|(i, n)| match n.name() {
            Some(name) => format!("{i} = {name}"),
            None => i.to_string(),
        })
        .collect();
    format!(
        "`{array}` has no element named or numbered `{seg}` (elements: {})",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(parse_path("a.b.c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            parse_path("phase.\"warm.up\".duration_s").unwrap(),
            ["phase", "warm.up", "duration_s"]
        );
        assert_eq!(
            parse_path("expect.instance 1 grows.factor").unwrap(),
            ["expect", "instance 1 grows", "factor"]
        );
        assert!(parse_path("a..b").is_err());
        assert!(parse_path("a.\"b").is_err());
        assert!(parse_path("").is_err());
        assert!(parse_path("a.").is_err());
    }

    #[test]
    fn assignments() {
        assert_eq!(split_assignment("a.b=1"), Some(("a.b", "1")));
        assert_eq!(
            split_assignment("\"x=y\".b=\"=\""),
            Some(("\"x=y\".b", "\"=\""))
        );
        assert_eq!(split_assignment("nothing"), None);
    }

    #[test]
    fn key_paths_display() {
        let p = KeyPath::root()
            .key("phase")
            .index(1)
            .key("fault")
            .index(0)
            .key("workers");
        assert_eq!(p.to_string(), "phase[1].fault[0].workers");
        assert_eq!(
            KeyPath::root()
                .key("expect")
                .index(0)
                .key("a b")
                .to_string(),
            "expect[0].\"a b\""
        );
    }

    #[test]
    fn values() {
        assert!(matches!(parse_value("16").val, Val::Int(16)));
        assert!(matches!(parse_value("2.5").val, Val::Float(f) if f == 2.5));
        assert!(matches!(parse_value("LMS*").val, Val::Str(ref s) if s == "LMS*"));
        assert!(matches!(parse_value("\"LMS*\"").val, Val::Str(ref s) if s == "LMS*"));
        assert!(matches!(parse_value("[1,2]").val, Val::Array(ref a) if a.len() == 2));
    }
}
