"""A synthetic git checkout for the localization benchmark: N source files in Python, TypeScript,
JavaScript, Go and Rust, ~5 KB each, with functions, classes and error strings, committed once.

Deterministic for a seed; the names come from word lists so that a task text can name a symbol or an
error message of one file (``tasks``), as a real issue does.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path


def _words(text: str, joiner: str = "") -> tuple[str, ...]:
    return tuple(w.replace(joiner, " ") if joiner else w for w in text.split())


WORDS = _words(
    "account invoice order cart payment user session token cache queue worker router request response "
    "schema record batch stream buffer parser lexer module package config setting option filter index "
    "ledger report export import upload download image thumbnail search query result page widget theme "
    "layout render template mailer notify webhook event signal metric counter gauge trace span retry "
    "timeout limit quota shard replica backup restore migrate tenant project team member role policy"
)
VERBS = _words("load save parse build apply check merge split fetch send read write render resolve sync")
LANGS = ((".py", 35), (".ts", 20), (".go", 20), (".rs", 10), (".js", 10), (".tsx", 5))
SYMPTOMS = _words(
    "must-not-be-empty is-out-of-range was-already-closed could-not-be-decoded has-expired", "-"
)


def _name(rng: random.Random) -> tuple[str, str, str]:
    return rng.choice(VERBS), rng.choice(WORDS), rng.choice(WORDS)


def _snake(verb: str, a: str, b: str) -> str:
    return f"{verb}_{a}_{b}"


def _camel(verb: str, a: str, b: str) -> str:
    return verb + a.capitalize() + b.capitalize()


def _body(ext: str, rng: random.Random, functions: int) -> tuple[str, list[str], list[str]]:
    """A source text of ``functions`` functions and a class; its symbols and its error messages."""
    lines: list[str] = []
    symbols: list[str] = []
    messages: list[str] = []
    cls = rng.choice(WORDS).capitalize() + rng.choice(WORDS).capitalize()
    symbols.append(cls)
    lines.append(
        {".py": f"class {cls}:", ".go": f"type {cls} struct {{", ".rs": f"pub struct {cls} {{"}.get(
            ext, f"export class {cls} {{"
        )
    )
    lines.append("    pass" if ext == ".py" else "}")
    for _ in range(functions):
        parts = _name(rng)
        name = _snake(*parts) if ext in {".py", ".rs"} else _camel(*parts)
        message = f"{parts[1]} {parts[2]} {rng.choice(SYMPTOMS)}"
        symbols.append(name)
        messages.append(message)
        filler = [
            f"value_{i} = {rng.randint(0, 999)}  # {rng.choice(WORDS)} {rng.choice(WORDS)}" for i in range(6)
        ]
        if ext == ".py":
            lines += [f"def {name}(items, limit=10):", *(f"    {f}" for f in filler)]
            lines += [
                "    if not items:",
                f'        raise ValueError("{message}")',
                "    return items[:limit]",
                "",
            ]
        elif ext == ".go":
            lines += [f"func {name.capitalize()}(items []string) ([]string, error) {{"]
            lines += [f"\t// {f}" for f in filler] + ["\tif len(items) == 0 {"]
            lines += [f'\t\treturn nil, fmt.Errorf("{message}")', "\t}", "\treturn items, nil", "}", ""]
            symbols[-1] = name.capitalize()
        elif ext == ".rs":
            lines += [f"pub fn {name}(items: &[u32]) -> Result<Vec<u32>, String> {{"]
            lines += [f"    // {f}" for f in filler] + ["    if items.is_empty() {"]
            lines += [
                f'        return Err("{message}".to_string());',
                "    }",
                "    Ok(items.to_vec())",
                "}",
                "",
            ]
        else:
            lines += [f"export function {name}(items: string[]): string[] {{"]
            lines += [f"  // {f}" for f in filler] + ["  if (items.length === 0) {"]
            lines += [f'    throw new Error("{message}");', "  }", "  return items;", "}", ""]
    return "\n".join(lines) + "\n", symbols, messages


def generate(root: Path, files: int, *, seed: int = 0) -> list[tuple[str, list[str], list[str]]]:
    """Write ``files`` source files under ``root`` and commit them; each file's path, symbols, messages."""
    rng = random.Random(seed)
    exts = [e for e, share in LANGS for _ in range(share)]
    dirs = [f"{rng.choice(WORDS)}/{rng.choice(WORDS)}" for _ in range(max(files // 40, 1))]
    made: list[tuple[str, list[str], list[str]]] = []
    seen: set[str] = set()
    while len(made) < files:
        ext = rng.choice(exts)
        rel = f"{rng.choice(dirs)}/{rng.choice(WORDS)}_{rng.choice(WORDS)}{ext}"
        if rel in seen:
            continue
        seen.add(rel)
        text, symbols, messages = _body(ext, rng, rng.randint(8, 20))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        made.append((rel, symbols, messages))
    git = shutil.which("git") or "git"
    config = ["-c", "user.email=bench@example.com", "-c", "user.name=bench", "-c", "commit.gpgsign=false"]
    subprocess.run([git, "init", "-q", str(root)], check=True)
    subprocess.run([git, "-C", str(root), "add", "-A"], check=True)
    subprocess.run([git, "-C", str(root), *config, "commit", "-qm", "synthetic"], check=True)
    return made


def tasks(
    made: list[tuple[str, list[str], list[str]]], count: int, *, seed: int = 1
) -> list[tuple[str, str]]:
    """``count`` task texts naming a symbol, an error message or a traceback frame of one file; (text, that
    file)."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        rel, symbols, messages = rng.choice(made)
        if i % 3 == 1:
            text = f"`{rng.choice(symbols[1:])}` returns the wrong items when the list is long; fix it"
        elif i % 3 == 2:  # a traceback frame names the file
            text = (
                f'The nightly job fails:\n  File "{rel}", line 12, in {rng.choice(symbols[1:])}\nValueError'
            )
        else:
            text = f'Users report "{rng.choice(messages)}" after the last release, please investigate'
        out.append((text, rel))
    return out
