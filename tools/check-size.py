#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""No function of src/ too long, no source file too long, no Manager too wide.

    check-size.py SRC_DIR
    check-size.py --self-test

Three limits, each a constant below:

  functions  every function definition of src/**/*.c, from the first line of
             its signature to the line of its closing brace, at most
             MAX_FUNCTION_LINES lines;
  files      every src/**/*.c at most MAX_FILE_LINES lines;
  Manager    struct Manager of src/daemon/manager.h at most MAX_MANAGER_FIELDS
             fields, counting declarators: `sd_event_source *a, *b;` is 2, a
             function pointer `int (*f)(int a, int b);` is 1, a nested struct or
             union is its declarators after the closing brace (one when anonymous).

The functions are found by their braces, with the comments, the string and
character literals and the preprocessor lines blanked first (so a brace in any
of them counts for nothing): a `{` outside every other brace opens a function
when what comes before it, since the last `;` or `}` there, ends with `)` and
has no `=` (`static const char *names[] = {` is data, `struct S {` a type).
The tree's style (docs/HACKING.md) puts the signature at column 0, the `{` at
the end of its last line and the closing `}` at column 0; the check does not
depend on it, and says so when a function it found does not end at column 0.

Exit 0 when all three hold; otherwise each violation on a line of its own,
file:line and the name, exit 1. --self-test checks the parser on made-up
snippets.
"""
import os
import re
import sys

MAX_FUNCTION_LINES = 150
MAX_FILE_LINES = 1000
MAX_MANAGER_FIELDS = 30


def blank(text):
    """`text` with its comments, string and character literals and preprocessor
    lines (their continuations too) turned into spaces, every newline kept, so
    that offsets and line numbers stay those of the file."""
    out = list(text)
    i, n = 0, len(text)
    at_line_start = True

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if c == "\n":
            at_line_start = True
            i += 1
            continue
        if at_line_start and c in " \t":
            i += 1
            continue
        if at_line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":
                if text.startswith("/*", j):  # a comment may run past the line
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                    continue
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                    continue
                j += 1
            wipe(i, j)
            i = j
            continue
        at_line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            wipe(i, j)
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            wipe(i, j)
            i = j
        else:
            i += 1
    return "".join(out)


def function_name(header):
    """The name a function header (blanked, up to its `{`) defines: the
    identifier just before the last parenthesised group at its outside that
    follows an identifier other than an attribute; None if there is none."""
    depth, name = 0, None
    for m in re.finditer(r"[()]", header):
        if m.group(0) == ")":
            depth -= 1
            continue
        if depth == 0:
            before = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", header[:m.start()].rstrip())
            if before and before.group(0) not in ("__attribute__", "__declspec", "_Pragma"):
                name = before.group(0)
        depth += 1
    return name


def functions(text):
    """The function definitions of C `text`: (name, first line, last line,
    column of the closing brace), lines counted from 1."""
    code = blank(text)
    found = []
    depth = 0
    header_start = 0          # where the current top-level declaration began
    open_at = None            # offset of the `{` of the function being read
    name = None
    for i, c in enumerate(code):
        if c == "{":
            if depth == 0:
                header = code[header_start:i]
                stripped = header.strip()
                if stripped.endswith(")") and "=" not in stripped:
                    open_at = header_start + (len(header) - len(header.lstrip()))
                    name = function_name(stripped) or "?"
                else:
                    open_at = None
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                depth = 0  # an unbalanced brace: start afresh
            if depth == 0:
                if open_at is not None:
                    first = code.count("\n", 0, open_at) + 1
                    last = code.count("\n", 0, i) + 1
                    column = i - (code.rfind("\n", 0, i) + 1)
                    found.append((name, first, last, column))
                    open_at = None
                header_start = i + 1
        elif c == ";" and depth == 0:
            header_start = i + 1
    return found


def struct_body(text, name):
    """The blanked text between the braces of `struct NAME {`, and the line of
    that `{`; (None, 0) if the file has no such struct."""
    code = blank(text)
    m = re.search(r"\bstruct\s+" + re.escape(name) + r"\s*\{", code)
    if not m:
        return None, 0
    depth = 0
    for i in range(m.end() - 1, len(code)):
        if code[i] == "{":
            depth += 1
        elif code[i] == "}":
            depth -= 1
            if depth == 0:
                return code[m.end():i], code.count("\n", 0, m.start()) + 1
    return None, 0


def count_fields(body):
    """The declarators of a struct's body (blanked): one per name declared,
    `int a, *b;` two, `void (*f)(int, int);` one, `struct { int x; } s, t;` two,
    an anonymous `struct { int x, y; };` one."""
    fields = 0
    depth = 0           # of (), [] and {} inside the body
    commas = 0
    something = False   # the current declaration has a token
    nested = False      # it has a nested struct's body (anonymous when nothing follows)
    for c in body:
        if c in "([{":
            depth += 1
            something = True
        elif c in ")]}":
            depth -= 1
            if depth == 0 and c == "}":
                commas = 0   # the members of the nested struct are not ours
                something = False
                nested = True
                continue
        elif c == "," and depth == 0:
            commas += 1
        elif c == ";" and depth == 0:
            if something or nested:
                fields += commas + 1
            commas, something, nested = 0, False, False
        elif depth == 0 and not c.isspace():
            something = True
    return fields


def line_count(text):
    """The lines of `text`, as wc -l counts them, plus a last one with no newline."""
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


def check_file(path, rel, problems):
    """The function and file limits of one .c file; its number of functions."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    lines = line_count(text)
    if lines > MAX_FILE_LINES:
        problems.append(f"{rel}:1: {lines} lines, more than {MAX_FILE_LINES}: split the file")
    found = functions(text)
    for name, first, last, column in found:
        length = last - first + 1
        if length > MAX_FUNCTION_LINES:
            problems.append(f"{rel}:{first}: {name}() is {length} lines, more than {MAX_FUNCTION_LINES}")
        if column != 0:
            problems.append(f"{rel}:{last}: {name}() ends with a `}}` at column {column + 1}, not 1: "
                            f"the check may have misread the braces before it")
    return len(found)


def check_manager(path, rel, problems):
    """The field limit of struct Manager; its number of fields (None if not found)."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        problems.append(f"{rel}: not found: the Manager check checked nothing")
        return None
    body, line = struct_body(text, "Manager")
    if body is None:
        problems.append(f"{rel}: no `struct Manager {{`: the Manager check checked nothing")
        return None
    n = count_fields(body)
    if n > MAX_MANAGER_FIELDS:
        problems.append(f"{rel}:{line}: struct Manager has {n} fields, more than {MAX_MANAGER_FIELDS}")
    return n


def self_test():
    """The parser on made-up snippets: exit 0 when it finds what it should."""
    cases = [
        ("one function", "int f(void) {\n        return 0;\n}\n", [("f", 1, 3, 0)]),
        ("static, brace on the next line", "static int\ng(int a)\n{\n        return a;\n}\n",
         [("g", 1, 5, 0)]),
        ("multi-line signature",
         "/* a comment { */\nstatic int h(const char *a,\n             int b) {\n        return b;\n}\n",
         [("h", 2, 5, 0)]),
        ("braces in strings, characters and comments",
         'int s(void) {\n        puts("}\\"}");\n        putchar(\'}\');\n        /* } */ // }\n'
         "        return '{';\n}\nint t(void) {\n        return 1;\n}\n",
         [("s", 1, 6, 0), ("t", 7, 9, 0)]),
        ("data and types are not functions",
         "static const char *const names[] = {\n        \"a\",\n};\ntypedef struct S {\n        int a;\n} S;\n"
         "enum {\n        A,\n};\nstatic struct {\n        int x;\n} st = { 1 };\n"
         "int u(void) {\n        return 0;\n}\n",
         [("u", 13, 15, 0)]),
        ("a preprocessor line with a brace, a cleanup macro",
         "#define X {\n#define Y(a) \\\n        }\nDEFINE_TRIVIAL_CLEANUP_FUNC(Foo *, foo_free);\n"
         "_public_ int v(int x) __attribute__((nonnull)) {\n        if (x) {\n                return 1;\n"
         "        }\n        return 0;\n}\n",
         [("v", 5, 10, 0)]),
        ("nested blocks, a compound literal, an inner struct",
         "static void w(void) {\n        struct { int a; } x = { .a = 1 };\n        for (;;) {\n"
         "                y = (T) { 0 };\n        }\n}\n",
         [("w", 1, 6, 0)]),
        ("a closing brace not at column 0", "int z(void) {\n        return 0; }\n", [("z", 1, 2, 18)]),
    ]
    failed = 0
    for name, text, want in cases:
        got = functions(text)
        if got != want:
            print(f"self-test {name}: found {got}, want {want}")
            failed += 1

    long_body = "int long_one(void) {\n" + "        x++;\n" * (MAX_FUNCTION_LINES - 2) + "}\n"
    n = 1 + len(cases)
    for extra, want in ((0, 0), (1, 1)):
        text = long_body.replace("{\n", "{\n" + "        x++;\n" * extra, 1)
        got = [f for f in functions(text) if f[2] - f[1] + 1 > MAX_FUNCTION_LINES]
        if len(got) != want:
            print(f"self-test {MAX_FUNCTION_LINES + extra} lines: {len(got)} too long, want {want}")
            failed += 1
        n += 1

    fields = [
        ("plain", "int a;\nchar *b;\n", 2),
        ("declarators", "sd_event_source *a, *b, *c;\nsize_t n, m;\n", 5),
        ("function pointers", "int (*cb)(int a, int b);\nvoid (*f)(void), (*g)(int x, int y);\n", 3),
        ("arrays and bit-fields", "char name[4 * (1 + 2)], other[2];\nunsigned a : 1, b : 2;\n", 4),
        ("a nested struct and union", "struct {\n        int x, y;\n        char *z;\n} pos, *last;\n"
         "union { int i; float f; } u;\nint after;\n", 4),
        ("an anonymous union", "union {\n        int i, j;\n};\nint after;\n", 2),
        ("comments", "/* a, b; c */\nint a; // d, e;\n", 1),
    ]
    for name, body, want in fields:
        got = count_fields(blank(body))
        if got != want:
            print(f"self-test fields {name}: counted {got}, want {want}")
            failed += 1
        n += 1
    body, line = struct_body("/* s */\ntypedef struct Manager {\n        int a, b;\n        struct { int c; } d;\n"
                             "} Manager;\nstruct ManagerOther { int x; };\n", "Manager")
    if body is None or line != 2 or count_fields(body) != 3:
        print(f"self-test struct Manager: {body!r} at {line}")
        failed += 1
    n += 1

    for text, want in (("", 0), ("a\n", 1), ("a\nb", 2), ("a\n" * (MAX_FILE_LINES + 1), MAX_FILE_LINES + 1)):
        if line_count(text) != want:
            print(f"self-test line count of {text[:8]!r}...: {line_count(text)}, want {want}")
            failed += 1
        n += 1

    print(f"size self-test: {n} cases, {failed} failed")
    return 1 if failed else 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print("usage: check-size.py SRC_DIR | --self-test", file=sys.stderr)
        return 2
    src = sys.argv[1]
    problems = []
    files = n_functions = 0
    for dirpath, dirnames, names in os.walk(src):
        dirnames.sort()
        for f in sorted(names):
            if not f.endswith(".c"):
                continue
            path = os.path.join(dirpath, f)
            rel = os.path.join("src", os.path.relpath(path, src))
            n_functions += check_file(path, rel, problems)
            files += 1
    if n_functions == 0:
        problems.append(f"{src}: no function found: the check checked nothing")
    fields = check_manager(os.path.join(src, "daemon", "manager.h"), "src/daemon/manager.h", problems)

    for p in problems:
        print(p)
    print(f"size: {files} files, {n_functions} functions, struct Manager {fields} fields, "
          f"{len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
