//! No two modules of a crate import each other, directly or through
//! others: every crate of the workspace, read as text. A module names
//! another by a `use` or by a path in its code (`crate::a::b`,
//! `super::x`, a child module's name, or a name a `use` brought in), and
//! a name re-exported by a `use` is followed to the module that defines
//! it. The graph's nodes are modules (a file, or an inline `mod tests` in
//! it); a strongly connected component of two or more is a circle.
//!
//! Comments and string literals are skipped; macros are not expanded, so
//! a path that only a macro writes is not seen.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};

/// Circles known today, each with why it stands. A found circle is
/// excused when every module of it lies in one entry's places (a place
/// ending in `/` is a folder, any other a file); each entry must still
/// excuse a circle, so that it goes when its circle does.
const KNOWN: &[(&[&str], &str)] = &[];

#[test]
fn no_module_imports_itself_through_others() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = root.canonicalize().expect("the workspace root");
    let mut failures = Vec::new();
    let mut excused: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    let mut crates = 0;
    for krate in crate_dirs(&root) {
        for top in ["src/lib.rs", "src/main.rs"] {
            let top = krate.join(top);
            if !top.exists() {
                continue;
            }
            crates += 1;
            for circle in circles(&root, &top) {
                let known = KNOWN
                    .iter()
                    .position(|(places, _)| circle.modules.iter().all(|m| lies_in(m, places)));
                match known {
                    Some(k) => excused.entry(k).or_default().push(circle.text()),
                    None => failures.push(circle.text()),
                }
            }
        }
    }
    assert!(
        crates >= 12,
        "read only {crates} crate roots under {root:?}"
    );
    for (k, (places, why)) in KNOWN.iter().enumerate() {
        match excused.get(&k) {
            Some(found) => eprintln!("known circles in {places:?} ({why}):\n{}", found.join("\n")),
            None => failures.push(format!(
                "no circle is left in {places:?}: remove its entry from KNOWN"
            )),
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

/// Whether module `m` (its file, then `::` and an inline module's name)
/// lies in one of `places`.
fn lies_in(m: &str, places: &[&str]) -> bool {
    let file = m.split("::").next().unwrap_or(m);
    places.iter().any(|p| {
        if p.ends_with('/') {
            file.starts_with(p)
        } else {
            file == *p
        }
    })
}

/// The detector on a crate written for it: circles through a child's
/// name, `super::`, a re-export and `crate::` are found; paths in a comment
/// or a string are not read.
#[test]
fn a_circle_through_a_reexport_is_found() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let src = dir.path().join("src");
    fs::create_dir_all(src.join("a")).expect("src/a");
    let write = |p: &str, s: &str| fs::write(src.join(p), s).expect("write");
    write("lib.rs", "mod a;\nmod c;\npub use c::Thing;\n");
    write(
        "a/mod.rs",
        "mod b;\n// crate::c::nothing in a comment\nfn f() { b::g(); }\n",
    );
    write(
        "a/b.rs",
        "pub fn g() { let _ = crate::Thing; super::h(); }\n",
    );
    write(
        "c.rs",
        "pub struct Thing;\nfn k() { let _ = \"crate::a\"; }\n",
    );
    let found = circles(dir.path(), &src.join("lib.rs"));
    let files: Vec<Vec<String>> = found
        .iter()
        .map(|c| c.modules.iter().cloned().collect())
        .collect();
    assert_eq!(files, vec![vec!["src/a/b.rs", "src/a/mod.rs"]], "{files:?}");

    write("c.rs", "pub struct Thing;\nfn k() { crate::a::f(); }\n");
    let found = circles(dir.path(), &src.join("lib.rs"));
    assert_eq!(found.len(), 1);
    let files: Vec<&String> = found[0].modules.iter().collect();
    assert_eq!(files, ["src/a/b.rs", "src/a/mod.rs", "src/c.rs"]);
}

fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.join("Cargo.toml").exists())
        .collect();
    dirs.push(root.join("tests"));
    dirs.sort();
    dirs
}

/// One circle: its modules (files relative to the root; an inline module
/// as `file::name`) and the edges inside it.
struct Circle {
    modules: BTreeSet<String>,
    edges: Vec<(String, String, BTreeSet<String>)>,
}

impl Circle {
    fn text(&self) -> String {
        let mut s = format!("circle of {} modules:", self.modules.len());
        for (from, to, names) in &self.edges {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            s.push_str(&format!("\n  {from} -> {to}: {}", names.join(", ")));
        }
        s
    }
}

// ---------------------------------------------------------------- tokens

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Colons,
    Punct(char),
}

/// Identifiers, `::` and punctuation; comments, strings, chars, numbers
/// and lifetimes dropped.
fn tokens(text: &str) -> Vec<Tok> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let ident_start = |ch: char| ch.is_alphabetic() || ch == '_';
    let ident_char = |ch: char| ch.is_alphanumeric() || ch == '_';
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied().unwrap_or('\0');
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && next == '/' {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if ch == '/' && next == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if let Some(end) = raw_string_end(&c, i) {
            i = end;
        } else if ch == '"' || (matches!(ch, 'b' | 'c') && next == '"') {
            i += if ch == '"' { 1 } else { 2 };
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
        } else if ch == '\'' || (ch == 'b' && next == '\'') {
            let j = if ch == '\'' { i + 1 } else { i + 2 };
            if c.get(j) == Some(&'\\') {
                i = j + 2;
                while i < c.len() && c[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if c.get(j + 1) == Some(&'\'') {
                i = j + 2;
            } else {
                // A lifetime: its name is read as an identifier next.
                i = j;
            }
        } else if ch == 'r' && next == '#' && c.get(i + 2).is_some_and(|&x| ident_start(x)) {
            i += 2;
        } else if ident_start(ch) {
            let s = i;
            while i < c.len() && ident_char(c[i]) {
                i += 1;
            }
            out.push(Tok::Ident(c[s..i].iter().collect()));
        } else if ch.is_ascii_digit() {
            while i < c.len() && (ident_char(c[i]) || c[i] == '.' && c.get(i + 1) != Some(&'.')) {
                i += 1;
            }
        } else if ch == ':' && next == ':' {
            out.push(Tok::Colons);
            i += 2;
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    out
}

/// Where a raw string (`r"…"`, `r#"…"#`, `br#"…"#`) starting at `i` ends.
fn raw_string_end(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    if c.get(j) == Some(&'b') || c.get(j) == Some(&'c') {
        j += 1;
    }
    if c.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while c.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if c.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < c.len() {
        if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(j)
}

// --------------------------------------------------------------- modules

/// A module: a file, or an inline `mod x { … }` in one.
#[derive(Default)]
struct Module {
    file: String,
    parent: Option<usize>,
    children: HashMap<String, usize>,
    /// Items it defines (fn, struct, enum, trait, type, const, static, macro).
    items: BTreeSet<String>,
    /// `use` bindings: name -> path.
    uses: HashMap<String, Vec<String>>,
    /// `use path::*`.
    globs: Vec<Vec<String>>,
    /// Paths in its code (and the `use` paths), as written.
    paths: Vec<Vec<String>>,
    /// Its file, and for an inline module its path in the file (`a.rs::tests`).
    name: String,
}

struct Tree {
    modules: Vec<Module>,
}

impl Tree {
    fn read(root: &Path, top: &Path) -> Tree {
        let mut tree = Tree {
            modules: Vec::new(),
        };
        tree.read_file(root, top, None, None);
        tree
    }

    /// Read `file` as a module, child `name` of `parent`; its declared
    /// `mod x;` children are read in turn.
    fn read_file(&mut self, root: &Path, file: &Path, parent: Option<usize>, name: Option<&str>) {
        let text = fs::read_to_string(file).unwrap_or_else(|e| panic!("{file:?}: {e}"));
        let rel = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        let me = self.add(rel.clone(), parent, name);
        let toks = tokens(&text);
        // Where `mod x;` finds its file.
        let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("");
        let dir = if matches!(stem, "mod" | "lib" | "main") {
            file.parent().expect("a folder").to_path_buf()
        } else {
            file.with_extension("")
        };
        // Inline modules open at a brace depth.
        let mut scopes: Vec<(usize, usize)> = vec![(me, 0)];
        let mut depth = 0;
        let mut i = 0;
        let mut declared = Vec::new();
        while i < toks.len() {
            let here = scopes.last().expect("a scope").0;
            let ident = |k: usize| match toks.get(k) {
                Some(Tok::Ident(s)) => Some(s.as_str()),
                _ => None,
            };
            match &toks[i] {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if scopes.len() > 1 && scopes.last().expect("a scope").1 == depth {
                        scopes.pop();
                    }
                }
                Tok::Ident(kw) if kw == "mod" && i + 1 < toks.len() => {
                    if let Some(n) = ident(i + 1) {
                        match toks.get(i + 2) {
                            Some(Tok::Punct(';')) => declared.push((here, n.to_string())),
                            Some(Tok::Punct('{')) => {
                                let m = self.add(rel.clone(), Some(here), Some(n));
                                scopes.push((m, depth + 1));
                                depth += 1;
                                i += 3;
                                continue;
                            }
                            _ => {}
                        }
                    }
                }
                Tok::Ident(kw)
                    if kw == "use" && toks.get(i.wrapping_sub(1)) != Some(&Tok::Colons) =>
                {
                    i = self.read_use(here, &toks, i + 1, Vec::new());
                    continue;
                }
                Tok::Ident(kw)
                    if matches!(
                        kw.as_str(),
                        "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union"
                    ) =>
                {
                    if let Some(n) = ident(i + 1) {
                        self.modules[here].items.insert(n.to_string());
                    }
                }
                Tok::Ident(kw) if kw == "macro_rules" => {
                    if let Some(n) = ident(i + 2) {
                        self.modules[here].items.insert(n.to_string());
                    }
                }
                Tok::Ident(first)
                    if toks.get(i + 1) == Some(&Tok::Colons)
                        && toks.get(i.wrapping_sub(1)) != Some(&Tok::Colons)
                        && toks.get(i.wrapping_sub(1)) != Some(&Tok::Punct('$'))
                        && toks.get(i.wrapping_sub(1)) != Some(&Tok::Ident("in".into())) =>
                {
                    let mut path = vec![first.clone()];
                    let mut k = i + 1;
                    while toks.get(k) == Some(&Tok::Colons) {
                        match ident(k + 1) {
                            Some(s) => path.push(s.to_string()),
                            None => break,
                        }
                        k += 2;
                    }
                    self.modules[here].paths.push(path);
                    i = k;
                    continue;
                }
                _ => {}
            }
            i += 1;
        }
        for (owner, n) in declared {
            // A `mod x;` inside an inline module is not used in this workspace.
            assert_eq!(owner, me, "{rel}: `mod {n};` inside an inline module");
            let flat = dir.join(format!("{n}.rs"));
            let nested = dir.join(&n).join("mod.rs");
            let path = if flat.exists() { flat } else { nested };
            assert!(path.exists(), "{rel}: no file for `mod {n};`");
            self.read_file(root, &path, Some(me), Some(&n));
        }
    }

    fn add(&mut self, file: String, parent: Option<usize>, name: Option<&str>) -> usize {
        let id = self.modules.len();
        let label = match (parent, name) {
            (Some(p), Some(n)) if self.modules[p].file == file => {
                format!("{}::{n}", self.modules[p].name)
            }
            _ => file.clone(),
        };
        self.modules.push(Module {
            file,
            parent,
            name: label,
            ..Module::default()
        });
        if let (Some(p), Some(n)) = (parent, name) {
            self.modules[p].children.insert(n.to_string(), id);
        }
        id
    }

    /// Read one use tree from `toks[i]` under `prefix`; the index after it.
    fn read_use(&mut self, m: usize, toks: &[Tok], mut i: usize, mut prefix: Vec<String>) -> usize {
        if prefix.is_empty() && toks.get(i) == Some(&Tok::Colons) {
            i += 1;
        }
        loop {
            match toks.get(i) {
                Some(Tok::Punct('{')) => {
                    i += 1;
                    while !matches!(toks.get(i), Some(Tok::Punct('}')) | None) {
                        i = self.read_use(m, toks, i, prefix.clone());
                        if toks.get(i) == Some(&Tok::Punct(',')) {
                            i += 1;
                        }
                    }
                    i += 1;
                    break;
                }
                Some(Tok::Punct('*')) => {
                    self.modules[m].paths.push(prefix.clone());
                    self.modules[m].globs.push(prefix);
                    i += 1;
                    break;
                }
                Some(Tok::Ident(s)) => {
                    let s = s.clone();
                    i += 1;
                    if toks.get(i) == Some(&Tok::Colons) {
                        prefix.push(s);
                        i += 1;
                        continue;
                    }
                    let mut name = s.clone();
                    if s != "self" {
                        prefix.push(s);
                    } else if let Some(last) = prefix.last() {
                        name = last.clone();
                    }
                    if toks.get(i) == Some(&Tok::Ident("as".into())) {
                        if let Some(Tok::Ident(alias)) = toks.get(i + 1) {
                            name = alias.clone();
                        }
                        i += 2;
                    }
                    self.modules[m].paths.push(prefix.clone());
                    self.modules[m].uses.insert(name, prefix);
                    break;
                }
                _ => break,
            }
        }
        // The statement's end.
        if toks.get(i) == Some(&Tok::Punct(';')) {
            i += 1;
        }
        i
    }

    fn root(&self, m: usize) -> usize {
        let mut m = m;
        while let Some(p) = self.modules[m].parent {
            m = p;
        }
        m
    }

    /// The module a path written in module `m` leads to (the module of the
    /// item it names), or `None` when it leaves the crate.
    fn resolve(&self, m: usize, path: &[String], budget: usize) -> Option<usize> {
        if budget == 0 {
            return None;
        }
        let (mut at, mut rest) = match path.first().map(String::as_str) {
            Some("crate") => (self.root(m), &path[1..]),
            Some("self") => (m, &path[1..]),
            Some("super") => {
                let mut at = m;
                let mut k = 0;
                while path.get(k).map(String::as_str) == Some("super") {
                    at = self.modules[at].parent?;
                    k += 1;
                }
                (at, &path[k..])
            }
            Some(first) => {
                // A name in scope: a child module, a `use`, an item, a glob's.
                match self.step(m, first, budget)? {
                    Step::Module(x) => (x, &path[1..]),
                    Step::ItemIn(x) => return Some(x),
                }
            }
            None => return Some(m),
        };
        while let Some(seg) = rest.first() {
            match self.step(at, seg, budget) {
                Some(Step::Module(x)) => at = x,
                Some(Step::ItemIn(x)) => return Some(x),
                None => return Some(at),
            }
            rest = &rest[1..];
        }
        Some(at)
    }

    /// What `name` is in module `m`.
    fn step(&self, m: usize, name: &str, budget: usize) -> Option<Step> {
        let module = &self.modules[m];
        if let Some(&c) = module.children.get(name) {
            return Some(Step::Module(c));
        }
        if module.items.contains(name) {
            return Some(Step::ItemIn(m));
        }
        if let Some(path) = module.uses.get(name) {
            let to = self.resolve(m, path, budget - 1)?;
            // A `use` of a module goes on from it; of an item, stops there.
            return Some(if self.is_module_path(m, path, to, budget) {
                Step::Module(to)
            } else {
                Step::ItemIn(to)
            });
        }
        for glob in &module.globs {
            if let Some(g) = self.resolve(m, glob, budget - 1)
                && g != m
                && let Some(s) = self.step(g, name, budget - 1)
            {
                return Some(s);
            }
        }
        None
    }

    /// Whether `path` (written in `m`, leading to `to`) names the module
    /// `to` itself rather than an item in it.
    fn is_module_path(&self, m: usize, path: &[String], to: usize, budget: usize) -> bool {
        let Some(last) = path.last() else {
            return true;
        };
        if matches!(last.as_str(), "crate" | "self" | "super") {
            return true;
        }
        let parent = self.resolve(m, &path[..path.len() - 1], budget - 1);
        parent.is_some_and(|p| self.modules[p].children.get(last) == Some(&to))
            || (path.len() == 1 && self.modules[m].children.get(last) == Some(&to))
    }
}

enum Step {
    Module(usize),
    ItemIn(usize),
}

/// The circles among the modules of the crate whose top file is `top`.
fn circles(root: &Path, top: &Path) -> Vec<Circle> {
    let tree = Tree::read(root, top);
    // file -> file -> the paths that tie them.
    let mut edges: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (id, module) in tree.modules.iter().enumerate() {
        edges.entry(module.name.clone()).or_default();
        for path in &module.paths {
            let Some(to) = tree.resolve(id, path, 16) else {
                continue;
            };
            let to = &tree.modules[to].name;
            if *to != module.name {
                edges
                    .entry(module.name.clone())
                    .or_default()
                    .entry(to.clone())
                    .or_default()
                    .insert(path.join("::"));
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|files| {
            let mut inside = Vec::new();
            for f in &files {
                for (t, names) in &edges[f] {
                    if files.contains(t) {
                        inside.push((f.clone(), t.clone(), names.clone()));
                    }
                }
            }
            Circle {
                modules: files,
                edges: inside,
            }
        })
        .collect()
}

/// Tarjan's strongly connected components.
fn strongly_connected(
    edges: &BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        edges: &'a BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
        index: HashMap<&'a str, usize>,
        low: HashMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let edges = s.edges;
        for w in edges.get(v).into_iter().flat_map(|m| m.keys()) {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut c = BTreeSet::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                c.insert(w.to_string());
                if w == v {
                    break;
                }
            }
            s.out.push(c);
        }
    }
    let mut s = State {
        edges,
        index: HashMap::new(),
        low: HashMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.out.sort();
    s.out
}
