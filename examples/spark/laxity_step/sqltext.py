"""Just enough of SQL's lexical structure to take one SELECT apart.

The decomposition never rewrites what it does not understand: it cuts the
query's text at its top-level clauses and at aggregate calls and passes
every other piece through character for character, so the Spark SQL a user
wrote is the Spark SQL that runs. The tokenizer therefore only has to know
where strings, quoted identifiers, comments and parentheses begin and end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple


class QueryError(ValueError):
    """A query the reference job cannot decompose, with the reason."""


@dataclass(frozen=True)
class Token:
    """One lexical token: kind is word, number, string, quoted, punct,
    space or comment; text is exactly the source's characters."""

    kind: str
    text: str
    start: int
    end: int

    @property
    def significant(self) -> bool:
        return self.kind not in ("space", "comment")

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words


def tokenize(sql: str) -> List[Token]:
    """Splits sql into tokens whose texts concatenate back to sql."""
    tokens: List[Token] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        start = i
        if c.isspace():
            while i < n and sql[i].isspace():
                i += 1
            kind = "space"
        elif sql.startswith("--", i):
            while i < n and sql[i] != "\n":
                i += 1
            kind = "comment"
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            if end < 0:
                raise QueryError("a /* comment starting at character %d is never closed" % i)
            i = end + 2
            kind = "comment"
        elif c in "'\"`":
            i = _quoted_end(sql, i)
            # Spark reads "..." as a string literal, SQLite as an identifier
            # (or a string); either way its insides are opaque here.
            kind = "quoted" if c == "`" else "string"
        elif c.isdigit() or (c == "." and i + 1 < n and sql[i + 1].isdigit()):
            while i < n and (sql[i].isalnum() or sql[i] == "."):
                i += 1
            kind = "number"
        elif c.isalpha() or c == "_":
            while i < n and (sql[i].isalnum() or sql[i] == "_"):
                i += 1
            kind = "word"
        else:
            i += 1
            kind = "punct"
        tokens.append(Token(kind, sql[start:i], start, i))
    return tokens


def _quoted_end(sql: str, i: int) -> int:
    """The index after the quoted text opening at i: a doubled quote
    continues it, and in strings so does a backslash-escaped character, as
    Spark reads them."""
    quote = sql[i]
    j = i + 1
    while j < len(sql):
        if sql[j] == "\\" and quote != "`":
            j += 2
            continue
        if sql[j] == quote:
            if j + 1 < len(sql) and sql[j + 1] == quote:
                j += 2
                continue
            return j + 1
        j += 1
    raise QueryError("a %s-quoted text starting at character %d is never closed" % (quote, i))


def text_of(tokens: List[Token]) -> str:
    """The source text of tokens, trimmed of surrounding blanks and comments."""
    sig = [k for k, t in enumerate(tokens) if t.significant]
    if not sig:
        return ""
    return "".join(t.text for t in tokens[sig[0] : sig[-1] + 1])


def depths(tokens: List[Token]) -> List[int]:
    """The parenthesis depth each token stands at (an opening parenthesis at
    the depth outside it)."""
    out, depth = [], 0
    for t in tokens:
        if t.kind == "punct" and t.text == ")":
            depth -= 1
            if depth < 0:
                raise QueryError("a ) at character %d closes no (" % t.start)
        out.append(depth)
        if t.kind == "punct" and t.text == "(":
            depth += 1
    if depth != 0:
        raise QueryError("%d ( left unclosed" % depth)
    return out


def split_top_level(tokens: List[Token], separator: str = ",") -> List[List[Token]]:
    """tokens cut at the separators outside every parenthesis."""
    parts: List[List[Token]] = [[]]
    for t, d in zip(tokens, depths(tokens)):
        if d == 0 and t.kind == "punct" and t.text == separator:
            parts.append([])
        else:
            parts[-1].append(t)
    return parts


def matching_paren(tokens: List[Token], open_index: int) -> int:
    """The index of the ) that closes the ( at open_index."""
    depth = 0
    for k in range(open_index, len(tokens)):
        t = tokens[k]
        if t.kind == "punct" and t.text == "(":
            depth += 1
        elif t.kind == "punct" and t.text == ")":
            depth -= 1
            if depth == 0:
                return k
    raise QueryError("the ( at character %d is never closed" % tokens[open_index].start)


def next_significant(tokens: List[Token], k: int) -> Optional[int]:
    """The index of the first significant token at k or after, or None."""
    while k < len(tokens):
        if tokens[k].significant:
            return k
        k += 1
    return None


@dataclass(frozen=True)
class SelectStatement:
    """The top-level clauses of one SELECT, each as the source's tokens
    (empty when the clause is absent)."""

    select: List[Token]
    from_: List[Token]
    where: List[Token]
    group_by: List[Token]
    having: List[Token]
    order_by: List[Token]
    limit: List[Token]


# Clauses that may follow SELECT, in the order SQL requires them.
_CLAUSES: Tuple[Tuple[str, ...], ...] = (
    ("from",),
    ("where",),
    ("group", "by"),
    ("having",),
    ("order", "by"),
    ("limit",),
)

# Top-level words whose meaning the decomposition cannot keep.
_REFUSED = {
    "union": "a UNION of queries",
    "intersect": "an INTERSECT of queries",
    "except": "an EXCEPT of queries",
    "minus": "a MINUS of queries",
    "window": "a WINDOW clause",
    "qualify": "a QUALIFY clause",
    "cluster": "CLUSTER BY",
    "distribute": "DISTRIBUTE BY",
    "sort": "SORT BY",
}


def parse_select(sql: str) -> SelectStatement:
    """Cuts one SELECT statement into its top-level clauses.

    It refuses what it cannot cut faithfully: more than one statement, a
    statement that does not start with SELECT (a WITH clause belongs in a
    FROM subquery here), set operations and clauses whose meaning depends on
    the whole input.
    """
    tokens = tokenize(sql)
    d = depths(tokens)
    # A trailing semicolon ends the statement; another one starts a second.
    sig = [k for k, t in enumerate(tokens) if t.significant]
    while sig and tokens[sig[-1]].kind == "punct" and tokens[sig[-1]].text == ";":
        tokens = tokens[: sig[-1]]
        sig.pop()
    for k in sig:
        if tokens[k].kind == "punct" and tokens[k].text == ";":
            raise QueryError("the query file holds more than one statement (a ; at character %d)" % tokens[k].start)
    if not sig:
        raise QueryError("the query is empty")
    if not tokens[sig[0]].is_word("select"):
        raise QueryError(
            "the query must start with SELECT, got %r (write a WITH clause as a subquery in FROM)" % tokens[sig[0]].text
        )
    # Find where each clause starts, at depth 0.
    starts = {}  # clause index -> (first token of its body)
    order = []
    k = sig[0] + 1
    while k < len(tokens):
        t = tokens[k]
        if d[k] == 0 and t.kind == "word":
            word = t.text.lower()
            if word in _REFUSED:
                after = next_significant(tokens, k + 1)
                if word in ("cluster", "distribute", "sort"):
                    refused = after is not None and tokens[after].is_word("by")
                elif word == "window":
                    # WINDOW w AS (...), not a call of Spark's window().
                    named = next_significant(tokens, after + 1) if after is not None else None
                    refused = named is not None and tokens[after].kind == "word" and tokens[named].is_word("as")
                else:
                    refused = True
                if refused:
                    raise QueryError("the query uses %s, which per-batch partials cannot reproduce" % _REFUSED[word])
            for c, words in enumerate(_CLAUSES):
                if word != words[0]:
                    continue
                end = k
                if len(words) == 2:
                    after = next_significant(tokens, k + 1)
                    if after is None or not tokens[after].is_word(words[1]):
                        continue
                    end = after
                if c in starts:
                    raise QueryError("the clause %s appears twice at the top level" % " ".join(words).upper())
                if order and c < order[-1]:
                    raise QueryError("the clause %s is out of SQL's order" % " ".join(words).upper())
                starts[c] = (k, end + 1)
                order.append(c)
                k = end
                break
        k += 1
    bodies: List[List[Token]] = []
    select_end = starts[order[0]][0] if order else len(tokens)
    select_body = tokens[sig[0] + 1 : select_end]
    for c in range(len(_CLAUSES)):
        if c not in starts:
            bodies.append([])
            continue
        later = [starts[o][0] for o in order if o > c]
        bodies.append(tokens[starts[c][1] : later[0] if later else len(tokens)])
    if not starts.get(0):
        raise QueryError("the query has no FROM clause: there is no input to aggregate")
    return SelectStatement(select_body, *bodies)
