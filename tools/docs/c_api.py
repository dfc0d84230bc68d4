"""Render the public C headers' doc comments into the docs site's C API page.

``microtrain.h`` is the C manual (CONTRIBUTING: Doxygen ``@brief``, ``@param``, ``@return``);
this script turns it and the headers it includes into ``reference/c_api.md`` for mkdocs,
without Doxygen: each ``/** ... */`` comment is paired with the declaration that follows it
(a function prototype, a struct, an enum or a ``#define``), members' ``/**< ... */`` comments
become a table, and the ``/* --- */ /* Title */`` banners become sections. The page is made
at every ``mkdocs build`` (``docs/hooks.py``), so it cannot drift from the headers.

    python tools/docs/c_api.py [OUT.md]      # default: print to stdout
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEADERS = ["microtrain.h", "microtrain_session.h", "microtrain_checkpoint.h", "microtrain_storage.h"]
INCLUDE = ROOT / "micro_core" / "include"

_BANNER = re.compile(r"^/\* -{10,} \*/\n/\* (.+?) +\*/\n/\* -{10,} \*/\n", re.M)
_DOC = re.compile(r"/\*\*(?!<)(.*?)\*/", re.S)
_MEMBER_DOC = re.compile(r"/\*\*<(.*?)\*/", re.S)
_TAG = re.compile(r"@(brief|param(?:\[(?:in|out|in,out|in\|out)\])?|return|code|endcode|file)(?!\w)\s*")


def _clean(comment):
    """The text of a comment body: leading ' * ' gone, lines kept."""
    lines = comment.strip("\n").split("\n")
    out = []
    for line in lines:
        line = re.sub(r"^\s*\* ?", "", line) if line.lstrip().startswith("*") else line.strip()
        out.append(line.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def _inline(text):
    """Doxygen inline markup to markdown: @p name -> `name`."""
    return re.sub(r"@p\s+(\w+)", r"`\1`", text)


def _parse_comment(comment):
    """(body paragraphs as markdown, params [(direction, name, text)], return text)."""
    body, params, returns = [], [], []
    current = body
    in_code = False
    for line in _clean(comment):
        stripped = line.strip()
        if stripped.startswith("@code"):
            in_code = True
            body.append("```c")
            continue
        if stripped.startswith("@endcode"):
            in_code = False
            body.append("```")
            continue
        if in_code:
            body.append(line)
            continue
        tag = _TAG.match(stripped)
        if tag:
            name = tag.group(1)
            rest = stripped[tag.end():]
            if name == "brief" or name == "file":
                current = body
                if name == "brief":
                    body.append(_inline(rest))
            elif name.startswith("param"):
                direction = name[6:-1] if "[" in name else ""
                pname, _, text = rest.partition(" ")
                params.append([direction, pname, _inline(text.strip())])
                current = params[-1]
            elif name == "return":
                returns.append(_inline(rest))
                current = returns
            continue
        if current is body:
            body.append(_inline(line))
        elif current is returns:
            returns.append(_inline(stripped))
        else:
            current[2] = (current[2] + " " + _inline(stripped)).strip()
    return body, params, " ".join(r for r in returns if r)


def _declaration(source, start):
    """The declaration starting at ``start`` (after a doc comment) and where it ends."""
    rest = source[start:]
    stripped = rest.lstrip()
    offset = start + len(rest) - len(stripped)
    if stripped.startswith("#define"):
        end = stripped.index("\n")
        return stripped[:end], offset + end
    if re.match(r"(typedef\s+)?(struct|enum)\b", stripped):
        depth, i = 0, 0
        while i < len(stripped):
            if stripped[i] == "{":
                depth += 1
            elif stripped[i] == "}":
                depth -= 1
            elif stripped[i] == ";" and depth == 0:
                return stripped[:i + 1], offset + i + 1
            i += 1
    end = stripped.find(";")
    return stripped[:end + 1], offset + end + 1


def _name_of(decl):
    if decl.startswith("#define"):
        return decl.split()[1]
    head = decl.split("{")[0]
    if "{" in decl:  # struct or enum: the typedef name after the closing brace, else its tag
        tail = decl.rsplit("}", 1)[1]
        match = re.search(r"(\w+)\s*;", tail)
        if match:
            return match.group(1)
        match = re.search(r"(?:struct|enum)\s+(\w+)", head)
        return match.group(1) if match else ""
    match = re.search(r"(\w+)\s*\(", decl)
    if match:
        return match.group(1)
    match = re.search(r"(\w+)\s*;", decl)
    return match.group(1) if match else ""


def _members(decl):
    """[(member declaration, its /**< */ text)] of a struct or enum with member comments."""
    if "{" not in decl:
        return []
    inner = decl[decl.index("{") + 1:decl.rindex("}")]
    rows = []
    pending = None
    for piece in re.split(r"(/\*\*<.*?\*/)", inner, flags=re.S):
        doc = _MEMBER_DOC.fullmatch(piece)
        if doc:
            if pending is not None:
                text = " ".join(l.strip() for l in _clean(doc.group(1)))
                rows.append([pending, _inline(text)])
                pending = None
            continue
        for line in piece.split("\n"):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if pending is not None:
                rows.append([pending, ""])
            pending = line.rstrip(",;").strip()
    if pending:
        rows.append([pending, ""])
    return rows if any(text for _, text in rows) else []


def _strip_member_comments(decl):
    decl = _MEMBER_DOC.sub("", decl)
    return "\n".join(line.rstrip() for line in decl.split("\n"))


def _op_table():
    """The rows of microtrain_ops.def: code, enum name, kernel name, what it computes."""
    rows = ["\n| code | `MT_OP_` | name | what it computes |", "|---|---|---|---|"]
    for line in (INCLUDE / "microtrain_ops.def").read_text().split("\n"):
        match = re.match(r"MT_OP\((\d+), (\w+), (\w+), \w+\)\s*/\*\s*(.*?)\s*\*/", line)
        if match:
            code, enum, name, text = match.groups()
            rows.append("| %s | `%s` | `%s` | %s |" % (code, enum, name, text.replace("|", "\\|")))
    return "\n".join(rows) + "\n"


def render_header(path):
    source = path.read_text()
    out = []
    banners = [(m.start(), m.group(1)) for m in _BANNER.finditer(source)]
    position = 0
    file_doc = None
    for match in _DOC.finditer(source):
        while banners and banners[0][0] < match.start():
            out.append("\n## %s\n" % banners.pop(0)[1])
        if match.start() < position:
            continue
        body, params, returns = _parse_comment(match.group(1))
        if "@file" in match.group(1):
            file_doc = body
            position = match.end()
            continue
        decl, position = _declaration(source, match.end())
        if not decl or decl.startswith("/*"):
            continue
        name = _name_of(decl)
        out.append("\n### `%s`\n" % name if name else "\n")
        out.append("```c\n%s\n```\n" % _strip_member_comments(decl).strip())
        text = "\n".join(body).strip()
        if text:
            out.append(text + "\n")
        members = _members(decl)
        if name == "mt_op_type":
            out.append(_op_table())
        if members:
            out.append("\n| member | meaning |\n|---|---|")
            out.extend("| `%s` | %s |" % (m.replace("|", "\\|"), t.replace("|", "\\|")) for m, t in members)
            out.append("")
        if params:
            out.append("\n| parameter | | meaning |\n|---|---|---|")
            out.extend("| `%s` | %s | %s |" % (p, d, t.replace("|", "\\|")) for d, p, t in params)
            out.append("")
        if returns:
            out.append("\n**Returns** %s\n" % returns)
    intro = "\n".join(file_doc).strip() + "\n" if file_doc else ""
    return intro, "\n".join(out)


def render():
    parts = ["# C API reference\n",
             "Generated from the public headers in `micro_core/include/` (their doc comments are the "
             "manual; `tools/docs/c_api.py` renders them at every docs build). "
             "`#include \"microtrain.h\"` gives the whole API.\n"]
    for name in HEADERS:
        intro, body = render_header(INCLUDE / name)
        parts.append("\n# `%s`\n" % name)
        if intro:
            if intro.lstrip().startswith("```"):
                parts.append(intro)
            else:
                parts.append("```text\n%s```\n" % intro if name == "microtrain.h" and False else intro)
        parts.append(body)
    return "\n".join(parts).replace("\n\n\n", "\n\n")


def main(argv):
    text = render()
    if len(argv) > 1:
        pathlib.Path(argv[1]).write_text(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
