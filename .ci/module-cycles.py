#!/usr/bin/env python3
"""Fails when the modules of a crate under crates/ use each other in a cycle.

docs/ARCHITECTURE.md, "Modules depend one way": no module cycle in a crate. A module is a
file (`src/a/b.rs` or `src/a/b/mod.rs` is `a::b`). Every path a file names (`crate::a::b`,
`super::x`, `self::y`, in `use` trees and in expressions) gives an edge between the two
siblings that hold the two ends below their closest common parent: `a::b::c` naming `a::d::e`
is the edge `b -> d` inside `a`. A module naming its own ancestor or descendant is not an edge
(a parent declares its children, and children use what the parent re-exports). Then every
strongly connected set of two or more siblings is printed with one file and line per edge, and
the script exits 1.

Usage: .ci/module-cycles.py [CRATES_DIR]   (default: crates)
"""

import os
import re
import sys

IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def module_of(src, path):
    rel = os.path.relpath(path, src)[: -len(".rs")].split(os.sep)
    if rel[-1] in ("lib", "main", "mod"):
        rel = rel[:-1]
    return tuple(rel)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    out = []
    for line in text.split("\n"):
        # Drop // comments (doc comments included), keeping string contents intact enough for
        # paths: a `//` inside a string literal is rare in this code base and only loses edges.
        idx = line.find("//")
        out.append(line if idx < 0 else line[:idx])
    return "\n".join(out)


def expand_use_tree(tree):
    """`a::{b, c::{d, e}}` -> ['a::b', 'a::c::d', 'a::c::e'] (whitespace removed)."""
    tree = re.sub(r"\s+", "", tree)
    results = []

    def walk(prefix, s):
        depth, start, parts = 0, 0, []
        for i, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:i])
                start = i + 1
        parts.append(s[start:])
        for part in parts:
            if not part:
                continue
            brace = part.find("{")
            if brace >= 0 and part.endswith("}"):
                walk(prefix + part[:brace], part[brace + 1 : -1])
            else:
                results.append(prefix + part.split("as")[0] if "::as" in part else prefix + part)

    walk("", tree)
    return results


def resolve(module, path):
    """A path as written in `module` -> absolute module path tuple, or None if not crate-local."""
    segs = [s for s in path.split("::") if s]
    if not segs:
        return None
    if segs[0] == "crate":
        base, rest = (), segs[1:]
    elif segs[0] in ("super", "self"):
        base = module
        rest = segs
        while rest and rest[0] in ("super", "self"):
            if rest[0] == "super":
                base = base[:-1]
            rest = rest[1:]
    else:
        return None
    return base + tuple(s for s in rest if re.fullmatch(IDENT, s))


def edges_of(src, modules, path):
    module = module_of(src, path)
    text = strip_comments(open(path, encoding="utf-8").read())
    found = []
    lines = text.split("\n")
    offsets = []
    pos = 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1

    def line_of(index):
        lo, hi = 0, len(offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if offsets[mid] <= index:
                lo = mid
            else:
                hi = mid - 1
        return lo + 1

    spans = []
    for m in re.finditer(r"\buse\s+((?:crate|super|self)\b[^;]*);", text):
        for p in expand_use_tree(m.group(1)):
            spans.append((m.start(), p))
    for m in re.finditer(r"\b(crate|super|self)((?:::" + IDENT + r")+)", text):
        spans.append((m.start(), m.group(1) + m.group(2)))
    for index, p in spans:
        target = resolve(module, p)
        if target is None:
            continue
        # The longest prefix of the target that is a module of this crate.
        while target and target not in modules:
            target = target[:-1]
        common = 0
        while common < min(len(module), len(target)) and module[common] == target[common]:
            common += 1
        if common == len(module) or common == len(target):
            continue  # ancestor or descendant
        parent = module[:common]
        found.append((parent, module[common], target[common], path, line_of(index)))
    return found


def strongly_connected(nodes, graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
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
            out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "crates"
    failed = 0
    checked = 0
    for crate in sorted(os.listdir(root)):
        src = os.path.join(root, crate, "src")
        if not os.path.isdir(src):
            continue
        files = []
        for dirpath, _, names in os.walk(src):
            files += [os.path.join(dirpath, n) for n in names if n.endswith(".rs")]
        modules = {module_of(src, f) for f in files}
        # Binaries (src/bin/*.rs, src/main.rs beside lib.rs) are crates of their own.
        files = [f for f in files if os.sep + "bin" + os.sep not in os.path.relpath(f, src)]
        edges = {}
        for f in files:
            for parent, a, b, path, line in edges_of(src, modules, f):
                edges.setdefault(parent, {}).setdefault(a, {}).setdefault(b, (path, line))
        for parent, graph in sorted(edges.items()):
            checked += 1
            nodes = sorted(set(graph) | {b for bs in graph.values() for b in bs})
            plain = {a: sorted(bs) for a, bs in graph.items()}
            for comp in strongly_connected(nodes, plain):
                if len(comp) < 2:
                    continue
                failed += 1
                where = "::".join(parent) or "(crate root)"
                print(f"cycle in {crate}, {where}: {' <-> '.join(sorted(comp))}")
                for a in sorted(comp):
                    for b, (path, line) in sorted(graph.get(a, {}).items()):
                        if b in comp:
                            print(f"  {a} -> {b}  {path}:{line}")
    if failed:
        print(f"module-cycles: {failed} cycle(s)")
        return 1
    print(f"module-cycles: no cycle ({checked} groups of sibling modules with edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
