#!/usr/bin/env python3
"""import-circles: report every import circle between the modules of a crate.

usage: scripts/import-circles.py [--graph] [--self-test] [SRC_DIR ...]

With no SRC_DIR, checks every crate of the workspace (crates/*/src). Each
SRC_DIR is a crate's source folder; its crate roots are lib.rs, main.rs and
every bin/*.rs or bin/*/main.rs, and its modules are the files reached from a
root through `mod NAME;` declarations (NAME.rs or NAME/mod.rs).

The graph. A module depends on another when its code names it; comments,
string literals and what `#[cfg(test)]` compiles only for tests (a `mod
tests { … }`, a test-only `mod NAME;` file, a test-only `use`) are left out,
since a unit test may drive its module through the crate's public API:
  - a path from `crate::`, `super::` or `self::` (grouped `use` trees
    expanded), resolved to the longest prefix that is a module; when the next
    name is one the module brings in with `use` (a re-export such as
    `pub use event::Event;` in lib.rs, or a glob), the path is followed to
    where that name comes from, so `crate::Event` depends on event.rs, not on
    the root that lists it; a macro `crate::name!` resolves to the file that
    defines it;
  - a path through a module name a `use` brought in (`use crate::drive;`
    then `drive::run`);
  - a path through one of its own child modules (`child::Item`, or `child`
    in a `use` tree), the `mod child;` declaration aside.

The circles. A circle is reported at the module that holds it: for each
module P, the nodes are P's own file and each of P's children, a child that
is a folder standing for everything under it. An edge between two files is
lifted to the children of their nearest common module (or to P's own file
when one of them is P). Every strongly connected component of more than one
node at any level is a circle; it is printed with the edges that form it and,
for each, the first line that makes it. Every circle between files shows up
at one of these levels, and a circle between folders shows up even when no
two single files point at each other.

  --graph      also print each crate's module graph (file-level edges)
  --self-test  run the checker on small trees it writes to a temporary
               folder (circles it must find, shapes it must pass) and exit
               non-zero if it misjudges one
  --help       this text

Exit status: 0 when no circle is found, 1 when one is, 2 on a usage error.
"""
import os
import re
import signal
import sys


def code_only(src):
    """The code with comments and the contents of string and character
    literals replaced by spaces (lines kept)."""
    out = []
    i, n = 0, len(src)

    def blank(ch):
        return "\n" if ch == "\n" else " "

    while i < n:
        c = src[i]
        nx = src[i + 1] if i + 1 < n else ""
        if c == "/" and nx == "/":
            while i < n and src[i] != "\n":
                out.append(" ")
                i += 1
        elif c == "/" and nx == "*":
            depth = 0
            while i < n:
                if src.startswith("/*", i):
                    depth += 1
                    out.append("  ")
                    i += 2
                elif src.startswith("*/", i):
                    depth -= 1
                    out.append("  ")
                    i += 2
                    if depth == 0:
                        break
                else:
                    out.append(blank(src[i]))
                    i += 1
        elif (
            c in "rb"
            and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_"))
            and re.match(r'(?:br|r)#*"', src[i:])
        ):
            m = re.match(r'(?:br|r)(#*)"', src[i:])
            hashes = len(m.group(1))
            out.append(" " * m.end())
            i += m.end()
            close = '"' + "#" * hashes
            while i < n and not src.startswith(close, i):
                out.append(blank(src[i]))
                i += 1
            out.append(" " * len(close))
            i += len(close)
        elif c == '"':
            out.append(" ")
            i += 1
            while i < n and src[i] != '"':
                if src[i] == "\\":
                    out.append(" ")
                    i += 1
                if i < n:
                    out.append(blank(src[i]))
                    i += 1
            out.append(" ")
            i += 1
        elif c == "'" and nx == "\\":
            out.append("  ")
            i += 2
            while i < n and src[i] != "'":
                out.append(" ")
                i += 1
            out.append(" ")
            i += 1
        elif c == "'" and i + 2 < n and src[i + 2] == "'":
            out.append("   ")
            i += 3
        else:
            out.append(c)
            i += 1
    return "".join(out)


def without_tests(code):
    """`code` with the items `#[cfg(test)]` gates blanked (lines kept): an
    inline module's braces, or an item up to its `;`."""
    out = list(code)
    for m in re.finditer(r"#\[cfg\(test\)\]", code):
        i = m.end()
        j = i
        while j < len(code) and code[j] not in "{;":
            j += 1
        if j >= len(code):
            continue
        end = j
        if code[j] == "{":
            depth = 0
            for k in range(j, len(code)):
                if code[k] == "{":
                    depth += 1
                elif code[k] == "}":
                    depth -= 1
                    if depth == 0:
                        end = k
                        break
        for k in range(m.start(), end + 1):
            if out[k] != "\n":
                out[k] = " "
    return "".join(out)


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MOD_DECL = re.compile(
    r"(?:#\[path\s*=\s*\"([^\"]*)\"\]\s*)?(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;"
)


def is_ident(ch):
    return ch.isalnum() or ch == "_"


class Module:
    def __init__(self, path, file, code, lines):
        self.path = path  # tuple of names, () for the crate root
        self.file = file  # relative to the src dir
        self.code = code
        self.lines = lines
        self.children = []
        self.uses = {}  # name -> full path (tuple) it stands for
        self.globs = []  # full paths of `use X::*`
        self.defs = set()


def line_of(m, at):
    return m.code.count("\n", 0, at) + 1


def paths_at(code, at):
    """The paths of a `use` tree or expression at code[at:] (just past a
    `crate::`, `super::` or `self::`): lists of segments, grouped trees
    expanded; each with its `as` rename (or None) and whether it ends in a
    macro call."""
    s = code[at:]
    stripped = s.lstrip()
    if stripped.startswith("{"):
        inner_start = at + (len(s) - len(stripped)) + 1
        out, depth, start = [], 0, inner_start
        for i in range(inner_start, len(code)):
            ch = code[i]
            if ch == "{":
                depth += 1
            elif ch == "}" and depth == 0:
                out.extend(paths_at_slice(code, start, i))
                return out
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                out.extend(paths_at_slice(code, start, i))
                start = i + 1
        return out
    segs = []
    i = at
    while True:
        while i < len(code) and code[i] in " \t\n":
            i += 1
        m = IDENT.match(code, i)
        if not m:
            break
        segs.append(m.group(0))
        i = m.end()
        j = i
        while j < len(code) and code[j] in " \t\n":
            j += 1
        if code.startswith("::", j):
            k = j + 2
            while k < len(code) and code[k] in " \t\n":
                k += 1
            if k < len(code) and code[k] == "{":
                return [(segs + p, a, mac) for (p, a, mac) in paths_at(code, k)]
            if k < len(code) and code[k] == "*":
                return [(segs + ["*"], None, False)]
            i = k
        else:
            break
    rest = code[i:]
    mac = rest.startswith("!")
    alias = None
    m = re.match(r"\s+as\s+([A-Za-z_][A-Za-z0-9_]*)", rest)
    if m:
        alias = m.group(1)
    return [(segs, alias, mac)] if segs else []


def paths_at_slice(code, start, end):
    return paths_at(code[:end], start)


def collect(src):
    """The crates under src: {root file: {path tuple: Module}}."""
    roots = []
    for r in ("lib.rs", "main.rs"):
        if os.path.isfile(os.path.join(src, r)):
            roots.append(r)
    bindir = os.path.join(src, "bin")
    if os.path.isdir(bindir):
        for e in sorted(os.listdir(bindir)):
            p = os.path.join("bin", e)
            if e.endswith(".rs"):
                roots.append(p)
            elif os.path.isfile(os.path.join(src, p, "main.rs")):
                roots.append(os.path.join(p, "main.rs"))
    crates = {}
    for root in roots:
        mods = {}

        def visit(path, rel, own_dir):
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                text = f.read()
            code = without_tests(code_only(text))
            # `pub(in crate::a)` names where an item is visible, not a use.
            code = re.sub(r"pub\s*\(\s*in\s+[^)]*\)", lambda m: " " * len(m.group(0)), code)
            m = Module(path, rel, code, text.split("\n"))
            mods[path] = m
            for d in MOD_DECL.finditer(code):
                # `#[path]` values are string literals, blanked in `code`:
                # read them from the text.
                pm = re.match(
                    r"#\[path\s*=\s*\"([^\"]*)\"\]", text[d.start() : d.end()]
                )
                name = d.group(2)
                if pm:
                    child = os.path.normpath(os.path.join(os.path.dirname(rel), pm.group(1)))
                    child_dir = os.path.dirname(child)
                else:
                    a = os.path.join(own_dir, name + ".rs")
                    b = os.path.join(own_dir, name, "mod.rs")
                    if os.path.isfile(os.path.join(src, a)):
                        child, child_dir = a, os.path.join(own_dir, name)
                    elif os.path.isfile(os.path.join(src, b)):
                        child, child_dir = b, os.path.join(own_dir, name)
                    else:
                        continue
                m.children.append(name)
                visit(path + (name,), child, child_dir)

        base = os.path.dirname(root)
        if root.startswith("bin" + os.sep) and root.endswith(".rs") and os.path.basename(root) != "main.rs":
            own = os.path.join(base, os.path.basename(root)[:-3])
        else:
            own = base
        visit((), root, own)
        crates[root] = mods
    return crates


DEF = re.compile(
    r"\b(?:fn|struct|enum|trait|type|const|static|union|mod|macro_rules!)\s+([A-Za-z_][A-Za-z0-9_]*)"
)


def inline_mods(code):
    """(start, end, name) of each inline `mod NAME { … }`."""
    out = []
    for m in re.finditer(r"\bmod\s+([A-Za-z_][A-Za-z0-9_]*)\s*\{", code):
        open_at = m.end() - 1
        depth = 0
        for i in range(open_at, len(code)):
            if code[i] == "{":
                depth += 1
            elif code[i] == "}":
                depth -= 1
                if depth == 0:
                    out.append((open_at, i, m.group(1)))
                    break
    return out


def prefix_for(m, kw, at, inline):
    base = list(m.path) + [n for (s, e, n) in inline if s < at < e]
    if kw == "crate":
        return []
    if kw == "super":
        return base[:-1]
    return base


def raw_paths(m):
    """Every (absolute path, as-name, is-macro, position, is-use) named in
    m's code from `crate::`, `super::` or `self::`, and through its
    children's names."""
    code = m.code
    inline = inline_mods(code)
    out = []
    for k in re.finditer(r"(?<![A-Za-z0-9_$:])(crate|super|self)\s*::", code):
        at = k.start()
        prefix = prefix_for(m, k.group(1), at, inline)
        rest = k.end()
        while True:
            mm = re.match(r"\s*super\s*::", code[rest:])
            if not mm:
                break
            prefix = prefix[:-1]
            rest += mm.end()
        is_use = re.search(r"\buse\s*$", code[max(0, at - 40) : at]) is not None
        for segs, alias, mac in paths_at(code, rest):
            full = prefix + segs
            if full and full[-1] == "self":
                full = full[:-1]
            out.append((tuple(full), alias, mac, at, is_use))
    # Relative paths through a child's name: `child::X`, `use child::X`,
    # `pub use {child::X, …}`.
    for child in m.children:
        for k in re.finditer(r"(?<![A-Za-z0-9_$:.])" + re.escape(child) + r"\s*::", code):
            for segs, alias, mac in paths_at(code, k.start()):
                is_use = re.search(r"\buse\s*\{?[^;]*$", code[max(0, k.start() - 200) : k.start()]) is not None
                out.append((tuple(m.path) + tuple(segs), alias, mac, k.start(), is_use))
    # `use` trees starting with a child's name or `{`: `pub use {a::X, b};`
    for u in re.finditer(r"\buse\s+(\{)", code):
        for segs, alias, mac in paths_at(code, u.start(1)):
            if segs and segs[0] in m.children:
                out.append((tuple(m.path) + tuple(segs), alias, mac, u.start(1), True))
    return out


def build(mods):
    """File-level edges: {(from, to): (file, line, text)}."""
    macros = {}
    for m in mods.values():
        m.defs = set(DEF.findall(m.code))
        for d in re.finditer(r"macro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)", m.code):
            macros[d.group(1)] = m.path
    per_module = {m.path: raw_paths(m) for m in mods.values()}
    # Each module's `use` names, for following re-exports.
    for m in mods.values():
        for full, alias, mac, at, is_use in per_module[m.path]:
            if not is_use or not full:
                continue
            if full[-1] == "*":
                m.globs.append(full[:-1])
            else:
                m.uses[alias or full[-1]] = full

    def resolve(full, depth=0):
        full = tuple(full)
        k = len(full)
        while k > 0 and full[:k] not in mods:
            k -= 1
        if depth < 16 and k < len(full):
            mod = mods[full[:k]]
            name = full[k]
            if name not in mod.defs and name not in mod.children:
                if name in mod.uses and mod.uses[name] != full[: k + 1]:
                    return resolve(mod.uses[name] + full[k + 1 :], depth + 1)
                for g in mod.globs:
                    t = resolve(g, depth + 1)
                    if t in mods and (name in mods[t].defs or name in mods[t].uses or name in mods[t].children):
                        return resolve(tuple(t) + full[k:], depth + 1)
        return full[:k]

    edges = {}

    def add(m, target, at):
        if target is None or target == m.path or target not in mods:
            return
        if (m.path, target) not in edges:
            ln = line_of(m, at)
            edges[(m.path, target)] = (m.file, ln, m.lines[ln - 1].strip())

    for m in mods.values():
        aliases = {}
        for full, alias, mac, at, is_use in per_module[m.path]:
            if mac and full:
                add(m, macros.get(full[-1]), at)
                continue
            if full and full[-1] == "*":
                add(m, resolve(full[:-1]), at)
                continue
            t = resolve(full)
            add(m, t, at)
            if is_use and full and tuple(full) in mods and len(full) >= 1:
                aliases[alias or full[-1]] = tuple(full)
        for name, full in aliases.items():
            if name in m.children:
                continue
            for k in re.finditer(r"(?<![A-Za-z0-9_$:.])" + re.escape(name) + r"\s*::", m.code):
                for segs, _a, _mac in paths_at(m.code, k.start()):
                    add(m, resolve(full + tuple(segs[1:])), k.start())
    return edges


def label(mods, path, top):
    """How a node of the level at `top` reads: its file, or a folder with /."""
    m = mods[path]
    if path == top:
        return m.file
    if os.path.basename(m.file) == "mod.rs":
        return os.path.dirname(m.file) + "/"
    if any(p[: len(path)] == path and len(p) > len(path) for p in mods):
        return m.file + " (and " + m.file[:-3] + "/)"
    return m.file


def sccs(nodes, adj):
    """Tarjan's strongly connected components."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(adj.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            strong(v)
    return out


def circles(mods, edges):
    """[(level, [node], [(from, to, evidence)])] for each circle."""
    levels = {}
    for (a, b), ev in edges.items():
        n = 0
        while n < min(len(a), len(b)) and a[n] == b[n]:
            n += 1
        top = a[:n]
        na = a[: n + 1] if len(a) > n else top
        nb = b[: n + 1] if len(b) > n else top
        levels.setdefault(top, {}).setdefault((na, nb), []).append((a, b, ev))
    found = []
    for top in sorted(levels):
        lifted = levels[top]
        adj = {}
        for (na, nb) in lifted:
            adj.setdefault(na, set()).add(nb)
        nodes = set(adj) | {x for s in adj.values() for x in s}
        for comp in sccs(nodes, adj):
            if len(comp) < 2:
                continue
            inside = []
            for (na, nb), evs in sorted(lifted.items()):
                if na in comp and nb in comp:
                    inside.append((na, nb, sorted(evs, key=lambda e: (e[2][0], e[2][1]))))
            found.append((top, comp, inside))
    return found


def check(src, show_graph):
    bad = 0
    for root, mods in collect(src).items():
        edges = build(mods)
        if show_graph:
            print(f"{src} [{root}]: {len(mods)} modules, {len(edges)} edges")
            for (a, b), (f, ln, _) in sorted(edges.items()):
                print(f"  {mods[a].file} -> {mods[b].file}   ({f}:{ln})")
        for top, comp, inside in circles(mods, edges):
            bad += 1
            names = " <-> ".join(label(mods, c, top) for c in comp)
            where = "crate root" if top == () else "module " + "::".join(top)
            print(f"circle in {src} [{root}], {where}: {names}")
            for na, nb, evs in inside:
                print(f"  {label(mods, na, top)} -> {label(mods, nb, top)}")
                for _a, _b, (f, ln, text) in evs[:3]:
                    print(f"      {os.path.join(src, f)}:{ln}: {text}")
                if len(evs) > 3:
                    print(f"      … and {len(evs) - 3} more")
    return bad


SELF_TESTS = [
    # (name, files, circles expected, text the report must hold)
    (
        "two siblings using each other",
        {
            "lib.rs": "mod a;\nmod b;\n",
            "a.rs": "use crate::b::Thing;\npub fn f() {}\n",
            "b.rs": "pub struct Thing;\nfn g() { crate::a::f() }\n",
        },
        1,
        ["a.rs <-> b.rs", "b.rs:2: fn g() { crate::a::f() }", "a.rs:1: use crate::b::Thing;"],
    ),
    (
        "two folders using each other through different files",
        {
            "lib.rs": "mod x;\nmod y;\n",
            "x/mod.rs": "pub mod p;\npub mod s;\n",
            "x/p.rs": "use crate::y::q::Q;\n",
            "x/s.rs": "pub struct S;\n",
            "y/mod.rs": "pub mod q;\npub mod r;\n",
            "y/q.rs": "pub struct Q;\n",
            "y/r.rs": "use super::super::x::s::S;\n",
        },
        1,
        ["x/ <-> y/"],
    ),
    (
        "a child using a type its parent defines while the parent lists it",
        {
            "lib.rs": "mod table;\n",
            "table/mod.rs": "mod one;\npub trait Backend {}\npub static T: &[fn()] = &[one::open];\n",
            "table/one.rs": "use super::Backend;\npub fn open() {}\n",
        },
        1,
        ["table/mod.rs <-> table/one.rs"],
    ),
    (
        "a use group and a module alias",
        {
            "lib.rs": "mod a;\nmod b;\nmod c;\n",
            "a.rs": "use crate::{c, b::{self, B}};\nfn f() { b::g(); }\n",
            "b.rs": "pub struct B;\npub fn g() {}\n",
            "c.rs": "use crate::a as up;\nfn h() { up::f(); }\n",
        },
        1,
        ["a.rs <-> c.rs"],
    ),
    (
        "re-exports followed, comments, strings and tests not counted",
        {
            "lib.rs": "mod event;\nmod poller;\npub use event::Event;\npub use poller::Poller;\n",
            "event.rs": "pub struct Event;\n// crate::poller::Poller\nconst S: &str = \"crate::poller\";\n#[cfg(test)]\nmod tests { use super::*; use crate::Poller; }\n#[cfg(test)]\nmod testkit;\n",
            "event/testkit.rs": "use crate::poller::Poller;\n",
            "poller.rs": "use crate::Event;\npub struct Poller(Event);\n",
        },
        0,
        ["no import circle"],
    ),
    (
        "a visibility path is not a use",
        {
            "lib.rs": "mod a;\n",
            "a/mod.rs": "mod b;\nfn g() { b::f() }\n",
            "a/b.rs": "pub(in crate::a) fn f() {}\n",
        },
        0,
        ["no import circle"],
    ),
    (
        "a root that holds a type its children import",
        {
            "lib.rs": "mod poller;\npub use poller::Poller;\npub struct Event;\n",
            "poller.rs": "use crate::Event;\npub struct Poller(Event);\n",
        },
        1,
        ["lib.rs <-> poller.rs"],
    ),
]


def self_test():
    import contextlib
    import io
    import tempfile

    failed = 0
    for name, files, want, texts in SELF_TESTS:
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "src")
            for rel, text in files.items():
                path = os.path.join(src, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(text)
            buf = io.StringIO()
            with contextlib.redirect_stdout(buf):
                got = check(src, False)
                if got == 0:
                    print("no import circle")
            out = buf.getvalue()
            missing = [t for t in texts if t not in out]
            if got != want or missing:
                failed += 1
                print(f"FAIL {name}: {got} circle(s), expected {want}; missing {missing}")
                print("    " + out.replace("\n", "\n    "))
            else:
                print(f"ok   {name}")
    if failed:
        print(f"import-circles self-test: {failed} of {len(SELF_TESTS)} failed")
        return 1
    print(f"import-circles self-test: {len(SELF_TESTS)} passed")
    return 0


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    show_graph = False
    dirs = []
    for a in argv:
        if a in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if a == "--self-test":
            return self_test()
        if a == "--graph":
            show_graph = True
        elif a.startswith("-"):
            print(f"import-circles: unknown option {a}; see --help", file=sys.stderr)
            return 2
        else:
            dirs.append(a)
    if not dirs:
        top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        crates = os.path.join(top, "crates")
        dirs = [
            os.path.relpath(os.path.join(crates, c, "src"))
            for c in sorted(os.listdir(crates))
            if os.path.isdir(os.path.join(crates, c, "src"))
        ]
    total = 0
    for d in dirs:
        if not os.path.isdir(d):
            print(f"import-circles: {d} is not a folder; give a crate's src/", file=sys.stderr)
            return 2
        total += check(d, show_graph)
    if total:
        print(f"{total} import circle(s) in {len(dirs)} crate(s): move what both sides need into a module below them")
        return 1
    print(f"no import circle in {len(dirs)} crate(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
