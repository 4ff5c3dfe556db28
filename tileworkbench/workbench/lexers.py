"""Pygments lexers for the workbench's stage tabs: Tile IR (MLIR-like), PTX and SASS.

LLVM IR and Python use Pygments' own lexers; `lexer_for(stage)` picks one lexer per stage name.
"""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups
from pygments.token import (
    Comment,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Whitespace,
)


class TileIRLexer(RegexLexer):
    """Tile IR as the printer writes it: `%x = arith.addf %a, %b : tensor<128xf32>  loc("k.py":5)`."""

    name = "Tile IR"
    aliases = ["tileir", "ttir"]
    filenames = ["*.ttir"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"loc\((?:[^()]|\([^()]*\))*\)", Comment.Special),  # locations stay quiet
            (r"%[\w.$-]+", Name.Variable),
            (r"\^[\w.$-]+", Name.Label),
            (r"@[\w.$-]+", Name.Function),
            (r"!tt\.ptr", Keyword.Type),
            (r"(tensor)(<)", bygroups(Keyword.Type, Punctuation), "shape"),
            (r"\b(?:[iu](?:1|8|16|32|64)|f8e4nv|f8e5|f16|bf16|f32|f64|index)\b", Keyword.Type),
            (r"#[\w.]+", Name.Decorator),  # layout encodings (#blocked, #mma ...)
            (r"\b(?:tt|arith|math|scf|gpu|llvm|ttg)\.[\w.]+", Name.Builtin),
            (r"\b(?:to|step|iter_args|do|else|true|false)\b", Keyword),
            (r'"(?:\\.|[^"\\])*"', String),
            (r"-?\d+\.\d*(?:[eE][-+]?\d+)?|-?\d+[eE][-+]?\d+", Number.Float),
            (r"0x[0-9a-fA-F]+|-?\d+", Number.Integer),
            (r"[=:,x]|->", Operator),
            (r"[()\[\]{}<>]", Punctuation),
            (r"[\w.]+", Text),
            (r".", Text),
        ],
        "shape": [  # inside tensor<...>: dims, `x`, the element type and an optional encoding
            (r">", Punctuation, "#pop"),
            (r"\d+", Number.Integer),
            (r"x", Operator),
            (r"!tt\.ptr<", Keyword.Type, "shape"),
            (r"[iu](?:1|8|16|32|64)|f8e4nv|f8e5|f16|bf16|f32|f64", Keyword.Type),
            (r"#[\w.]+", Name.Decorator),
            (r"[^>]", Text),
        ],
    }


class PTXLexer(RegexLexer):
    """NVIDIA PTX: directives (`.reg`, `.loc`), opcodes with their modifiers, registers and predicates."""

    name = "PTX"
    aliases = ["ptx"]
    filenames = ["*.ptx"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"(\.loc)(\s.*?$)", bygroups(Comment.Special, Comment.Special)),
            (r"\.[a-zA-Z_][\w]*", Keyword),  # directives and modifiers
            (r"@!?%?\w+", Keyword.Pseudo),  # predicate guards
            (r"%[\w.$]+", Name.Variable),
            (r"\$[\w$]+", Name.Label),
            (r"^[ \t]*[\w$]+:", Name.Label),
            (r'"(?:\\.|[^"\\])*"', String),
            (r"0[fFdD][0-9a-fA-F]+", Number.Float),
            (r"-?\d+\.\d+(?:[eE][-+]?\d+)?", Number.Float),
            (r"0x[0-9a-fA-F]+|-?\d+", Number.Integer),
            (r"[a-z][\w]*(?=[.\s;])", Name.Builtin),  # opcode
            (r"[\[\]{}(),;<>+\-|]", Punctuation),
            (r"\w+", Text),
            (r".", Text),
        ],
    }


class SASSLexer(RegexLexer):
    """SASS as `cuobjdump`/`nvdisasm` print it: `/*0040*/  IMAD R0, R1, c[0x0][0x0], RZ ;`."""

    name = "SASS"
    aliases = ["sass"]

    tokens = {
        "root": [
            (r"\s+", Whitespace),
            (r"//.*?$", Comment.Single),
            (r"/\*[0-9a-fA-F]+\*/", Comment.Special),
            (r"/\*[\s\S]*?\*/", Comment.Multiline),
            (r"@!?U?P[T\d]+", Keyword.Pseudo),
            (r"\b(?:U?R(?:\d+|Z)|U?P(?:\d+|T)|SR_\w+)\b", Name.Variable),
            (r"c\[0x[0-9a-fA-F]+\]", Name.Constant),
            (r"\.[\w]+", Keyword),
            (r"\b[A-Z][A-Z0-9_]+\b", Name.Builtin),
            (r"0x[0-9a-fA-F]+|-?\d+(?:\.\d+)?", Number),
            (r"[\[\](),;{}|+\-]", Punctuation),
            (r".", Text),
        ],
    }


def lexer_for(stage: str):
    """A Pygments lexer instance for a stage name (`source`, `tile*`, `llvm`, `ptx`, `sass`)."""
    from pygments.lexers import LlvmLexer, PythonLexer, TextLexer

    if stage == "source":
        return PythonLexer()
    if stage.startswith("tile") or stage in ("ttir", "ttgir"):
        return TileIRLexer()
    if stage in ("llvm", "llir"):
        return LlvmLexer()
    if stage == "ptx":
        return PTXLexer()
    if stage == "sass":
        return SASSLexer()
    return TextLexer()
