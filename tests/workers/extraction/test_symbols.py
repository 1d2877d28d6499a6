"""Symbols: definitions per language, from hunks and from structured edits."""

from __future__ import annotations

import pytest

from workers.extraction.diffs import Hunk, parse_patch
from workers.extraction.symbols import definition, symbols_from_edit, symbols_from_hunks


@pytest.mark.parametrize(
    ("path", "line", "name"),
    [
        ("a.py", "def login(user):", "login"),
        ("a.py", "    async def fetch(self) -> None:", "fetch"),
        ("a.py", "class Session(Base):", "Session"),
        ("a.py", "login(user)", None),
        ("a.ts", "export async function handler(req: Req) {", "handler"),
        ("a.ts", "export default class Store {", "Store"),
        ("a.ts", "const add = (a: number, b: number): number => a + b;", "add"),
        ("a.js", "export const fetchUser = async (id) => {", "fetchUser"),
        ("a.js", "  render() {", "render"),
        ("a.js", "  if (x) {", None),
        ("a.ts", "interface Props {", "Props"),
        ("a.go", "func (s *Server) Handle(w http.ResponseWriter) {", "Server.Handle"),
        ("a.go", "func Add(a, b int) int {", "Add"),
        ("a.go", "type Config struct {", "Config"),
        ("a.rs", "pub(crate) async fn connect(addr: &str) -> Result<()> {", "connect"),
        ("a.rs", "impl<T: Clone> Display for Wrapper<T> {", "Wrapper"),
        ("a.rs", "pub enum Shape {", "Shape"),
        ("a.rs", "trait Draw {", "Draw"),
        ("A.java", "public class UserService {", "UserService"),
        ("A.java", "    public static int add(int a, int b) {", "add"),
        ("A.java", "        return add(a, b);", None),
        ("a.kt", "suspend fun load(id: Int): User {", "load"),
        ("a.cs", "    public async Task<int> CountAsync(string q)", "CountAsync"),
        ("a.c", "static ast_t* make_pattern_type(pass_opt_t* opt, ast_t* pattern)", "make_pattern_type"),
        ("a.cpp", "int Parser::parse(const std::string& s) {", "Parser::parse"),
        ("a.c", "DEF(idseqsingle);", None),
        ("a.c", "  if (x == 1) {", None),
        ("a.pony", "class CommandParser", "CommandParser"),
        ("a.rb", "  def save!", "save!"),
    ],
)
def test_definition(path: str, line: str, name: str | None) -> None:
    found = definition(line, path)
    assert (found[1] if found else None) == name


def test_hunk_header_and_inner_definitions_qualify() -> None:
    hunk = Hunk(
        context="class TimeDelta(Field):",
        lines=[
            "     def _serialize(self, value):",
            "         base = 1",
            "-        return int(value / base)",
            "+        return int(round(value / base))",
            " ",
            "     def _deserialize(self, value):",
            "         return value",
        ],
    )
    assert symbols_from_hunks("fields.py", [hunk]) == ["TimeDelta._serialize"]


def test_a_change_after_a_definition_ends_is_not_inside_it() -> None:
    hunk = Hunk(context="", lines=[" def f():", "     return 1", " ", "+X = 2"])
    assert symbols_from_hunks("m.py", [hunk]) == []


def test_symbols_of_a_real_patch() -> None:
    patch = (
        "diff --git a/src/libponyc/expr/match.c b/src/libponyc/expr/match.c\n"
        "--- a/src/libponyc/expr/match.c\n+++ b/src/libponyc/expr/match.c\n"
        "@@ -314,8 +314,10 @@ static ast_t* make_pattern_type(pass_opt_t* opt, ast_t* pattern)\n"
        "     case TK_MATCH_DONTCARE:\n+      if (x) y();\n       return pattern_type;\n"
    )
    (diff,) = parse_patch(patch)
    assert symbols_from_hunks(diff.path, diff.hunks) == ["make_pattern_type"]


@pytest.mark.parametrize(
    ("old", "new", "snippet", "expected"),
    [
        ("def a():\n    return 1", "def a():\n    return 2", "", ["a"]),
        ("x = 1", "def helper():\n    return 1\nx = 1", "", ["helper"]),
        ("    return 1", "    return 2", "   10\tdef outer():\n   11\t    return 2\n", ["outer"]),
        ("x = 1", "x = 2", "", []),
    ],
)
def test_symbols_from_edit(old: str, new: str, snippet: str, expected: list[str]) -> None:
    assert symbols_from_edit("m.py", old, new, snippet) == expected


def test_a_top_level_definition_is_not_nested_in_the_header_definition() -> None:
    hunk = Hunk(
        context="interface Repo {",
        lines=[" const Viewer: React.FC = () => {", "+  const [dark, setDark] = useState(false);"],
    )
    assert symbols_from_hunks("Viewer.tsx", [hunk]) == ["Viewer"]


def test_brace_languages_close_a_definition_at_its_indent() -> None:
    hunk = Hunk(
        context="export default {",
        lines=[
            "   data() {",
            "     return { todos: [] }",
            "   },",
            "   methods: {",
            "     addTodo() {",
            "+      this.todos.push(x)",
            "     },",
        ],
    )
    assert symbols_from_hunks("app.js", [hunk]) == ["addTodo"]


def test_a_c_function_with_its_brace_on_the_next_line() -> None:
    hunk = Hunk(context="", lines=[" static int f(void)", " {", "+  return 1;", " }"])
    assert symbols_from_hunks("a.c", [hunk]) == ["f"]
