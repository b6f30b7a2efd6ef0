"""The step's parameters, as laxity's operator renders them.

laxity passes every parameter twice (docs/design.md, "The SparkApplication
a step becomes"; internal/sparkapp/render.go):

- as application arguments appended after the template's own, each one
  token --laxity-<name>=<value>: query, step, index, attempt, from-tuple
  and to-tuple (batches), inputs (merges), input (a batch's input location,
  at most once; a merge's result locations, once each, in order), output,
  and each key of the batch's slice (kafka-topic, kafka-starting-offsets,
  objectstore-keys, ...);
- as Spark settings spark.laxity.<name>: the same, but fromTuple and
  toTuple, and a merge's input locations joined by commas in one
  spark.laxity.input.

A shared batch, which reads its tuples once for several queries, also has
members (the queries it serves, its own query first, joined by commas) and
one output-<member> argument (spark.laxity.output.<member>) per member:
where that member's partial goes. Its own query's is output.

parse() takes both (either may be absent) and insists they agree, so a job
that reads one form cannot silently differ from one that reads the other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

ARGUMENT_PREFIX = "--laxity-"
CONF_PREFIX = "spark.laxity."

BATCH, PARTIAL, FINAL = "batch", "partial", "final"
KINDS = (BATCH, PARTIAL, FINAL)

# Argument name -> Spark setting name, where they differ.
_CONF_NAMES = {"from-tuple": "fromTuple", "to-tuple": "toTuple"}
_CONTRACT = ("query", "step", "index", "attempt", "from-tuple", "to-tuple", "inputs", "input", "output")
_DECIMAL = re.compile(r"^(0|[1-9][0-9]*)$")


class ParameterError(ValueError):
    """A step parameter that is missing, malformed or contradicted."""


@dataclass(frozen=True)
class Step:
    """One step of a query: what to read and where to write."""

    query: str
    kind: str
    index: int
    attempt: int
    output: str
    # A batch's tuple range [from_tuple, to_tuple); 0, 0 for merges.
    from_tuple: int = 0
    to_tuple: int = 0
    # A batch's input location (the query's spec.input.location), or None.
    input_location: Optional[str] = None
    # A merge's input result locations, in order; empty for batches.
    inputs: Tuple[str, ...] = ()
    # A batch's slice: its exact input from its source, by key.
    slice: Dict[str, str] = field(default_factory=dict)
    # A shared batch's members, its own query first, and where each one's
    # partial goes; empty for a step of one query.
    members: Tuple[str, ...] = ()
    outputs: Dict[str, str] = field(default_factory=dict)

    def results(self) -> List[Tuple[str, str]]:
        """(query, output) of every query the step computes a result for:
        each member of a shared batch, else the step's own query."""
        if self.members:
            return [(m, self.outputs[m]) for m in self.members]
        return [(self.query, self.output)]

    @property
    def is_merge(self) -> bool:
        return self.kind != BATCH


def describe(name: str) -> str:
    """How a parameter is named in errors: both of its spellings."""
    conf = _CONF_NAMES.get(name, name)
    if name.startswith(_MEMBER_OUTPUT):
        conf = _MEMBER_OUTPUT_CONF + name[len(_MEMBER_OUTPUT) :]
    return "%s%s (%s%s)" % (ARGUMENT_PREFIX, name, CONF_PREFIX, conf)


def split_arguments(argv: Sequence[str]) -> Tuple[List[str], List[str]]:
    """argv cut into laxity's arguments and the job's own."""
    ours = [a for a in argv if a.startswith(ARGUMENT_PREFIX)]
    return ours, [a for a in argv if not a.startswith(ARGUMENT_PREFIX)]


def _from_arguments(arguments: Sequence[str]) -> Dict[str, List[str]]:
    values: Dict[str, List[str]] = {}
    for a in arguments:
        name, eq, value = a[len(ARGUMENT_PREFIX) :].partition("=")
        if not eq or not name:
            raise ParameterError("argument %r: want %s<name>=<value>" % (a, ARGUMENT_PREFIX))
        values.setdefault(name, []).append(value)
    for name, vs in values.items():
        if name != "input" and len(vs) > 1:
            raise ParameterError("%s: given %d times as an argument" % (describe(name), len(vs)))
    return values


def _from_conf(conf: Mapping[str, str]) -> Dict[str, str]:
    to_argument = {v: k for k, v in _CONF_NAMES.items()}
    out = {}
    for key, value in conf.items():
        if key.startswith(CONF_PREFIX):
            name = key[len(CONF_PREFIX) :]
            if name.startswith(_MEMBER_OUTPUT_CONF):
                name = _MEMBER_OUTPUT + name[len(_MEMBER_OUTPUT_CONF) :]
            out[to_argument.get(name, name)] = value
    return out


# A shared batch's member outputs: --laxity-output-<member>,
# spark.laxity.output.<member>.
_MEMBER_OUTPUT, _MEMBER_OUTPUT_CONF = "output-", "output."


def _members(args: Dict[str, List[str]], settings: Dict[str, str], query: str, output: str) -> Tuple[Tuple[str, ...], Dict[str, str]]:
    """A batch's members and their outputs; empty for a step of one query."""
    listed = _single(args, settings, "members")
    named = sorted(n for n in set(args) | set(settings) if n.startswith(_MEMBER_OUTPUT))
    if listed is None:
        if named:
            raise ParameterError("%s: an output of a member, but %s names none" % (describe(named[0]), describe("members")))
        return (), {}
    members = tuple(listed.split(","))
    if len(members) < 2 or members[0] != query:
        raise ParameterError("%s: want two queries or more, %s first, got %r" % (describe("members"), query, listed))
    if any(not m for m in members) or len(set(members)) != len(members):
        raise ParameterError("%s: a member is empty or given twice in %r" % (describe("members"), listed))
    outputs = {}
    for m in members:
        location = _single(args, settings, _MEMBER_OUTPUT + m)
        if not location:
            raise ParameterError("%s: missing for member %s" % (describe(_MEMBER_OUTPUT + m), m))
        outputs[m] = location
    strays = [n for n in named if n[len(_MEMBER_OUTPUT) :] not in members]
    if strays:
        raise ParameterError("%s: not a member of %s" % (describe(strays[0]), listed))
    if outputs[query] != output:
        raise ParameterError("%s: %r, but %s is %r" % (describe(_MEMBER_OUTPUT + query), outputs[query], describe("output"), output))
    if len(set(outputs.values())) != len(outputs):
        raise ParameterError("%s: two members write to one location" % describe("members"))
    return members, outputs


def parse(arguments: Sequence[str], conf: Mapping[str, str]) -> Step:
    """The step laxity's arguments (--laxity-*) and Spark settings
    (spark.laxity.*) describe; ParameterError names the parameter that is
    missing, malformed, or different in the two forms."""
    args = _from_arguments(arguments)
    settings = _from_conf(conf)
    if not args and not settings:
        raise ParameterError(
            "no step parameters: laxity passes %s<name>=<value> arguments and %s<name> settings; "
            "is this running outside laxity?" % (ARGUMENT_PREFIX, CONF_PREFIX)
        )

    kind = _single(args, settings, "step")
    if kind not in KINDS:
        raise ParameterError("%s: want one of %s, got %r" % (describe("step"), ", ".join(KINDS), kind))

    def required(name: str) -> str:
        value = _single(args, settings, name)
        if value is None:
            raise ParameterError("%s: missing for a %s step" % (describe(name), kind))
        return value

    query = required("query")
    if not query:
        raise ParameterError("%s: empty" % describe("query"))
    output = required("output")
    if not output:
        raise ParameterError("%s: empty" % describe("output"))
    index = _count(required("index"), "index")
    attempt = _count(required("attempt"), "attempt")

    if kind == BATCH:
        for name in ("inputs",):
            if _single(args, settings, name) is not None:
                raise ParameterError("%s: a batch has no merge inputs" % describe(name))
        from_tuple = _count(required("from-tuple"), "from-tuple")
        to_tuple = _count(required("to-tuple"), "to-tuple")
        if to_tuple <= from_tuple:
            raise ParameterError(
                "%s: the tuple range [%d, %d) is empty" % (describe("to-tuple"), from_tuple, to_tuple)
            )
        locations = args.get("input", [])
        if len(locations) > 1:
            raise ParameterError("%s: a batch has one input location, got %d" % (describe("input"), len(locations)))
        location = _agree("input", locations[0] if locations else None, settings.get("input"))
        if location == "":
            raise ParameterError("%s: empty" % describe("input"))
        members, outputs = _members(args, settings, query, output)
        names = {n for n in (set(args) | set(settings)) - set(_CONTRACT) if n != "members" and not n.startswith(_MEMBER_OUTPUT)}
        slice_ = {name: _single(args, settings, name) for name in sorted(names)}
        return Step(query, kind, index, attempt, output, from_tuple, to_tuple, location, (), slice_, members, outputs)

    for name in ("from-tuple", "to-tuple"):
        if _single(args, settings, name) is not None:
            raise ParameterError("%s: a merge has no tuple range" % describe(name))
    extra = sorted((set(args) | set(settings)) - set(_CONTRACT))
    if extra:
        raise ParameterError("%s: a merge reads results, not a slice of the input" % describe(extra[0]))
    count = _count(required("inputs"), "inputs")
    if count < 1:
        raise ParameterError("%s: a merge needs at least one input, got 0" % describe("inputs"))
    from_args = tuple(args["input"]) if "input" in args else None
    from_conf = tuple(settings["input"].split(",")) if "input" in settings else None
    if from_args is not None and from_conf is not None and from_args != from_conf:
        raise ParameterError(
            "%s: the arguments name %s, the setting %s" % (describe("input"), list(from_args), list(from_conf))
        )
    locations = from_args if from_args is not None else from_conf
    if locations is None:
        raise ParameterError("%s: missing for a %s step" % (describe("input"), kind))
    if len(locations) != count:
        raise ParameterError(
            "%s: %s says %d inputs, but %d locations are given" % (describe("input"), describe("inputs"), count, len(locations))
        )
    for k, location in enumerate(locations):
        if not location:
            raise ParameterError("%s: location %d is empty" % (describe("input"), k))
    if len(set(locations)) != len(locations):
        raise ParameterError("%s: a location is given twice, which would merge its result twice" % describe("input"))
    return Step(query, kind, index, attempt, output, inputs=tuple(locations))


def _single(args: Dict[str, List[str]], settings: Dict[str, str], name: str) -> Optional[str]:
    value = args.get(name)
    return _agree(name, value[0] if value else None, settings.get(name))


def _agree(name: str, argument: Optional[str], setting: Optional[str]) -> Optional[str]:
    if argument is not None and setting is not None and argument != setting:
        raise ParameterError(
            "%s: the argument says %r, the setting %r" % (describe(name), argument, setting)
        )
    return argument if argument is not None else setting


def _count(value: str, name: str) -> int:
    if not _DECIMAL.match(value):
        raise ParameterError("%s: want a non-negative whole number in decimal, got %r" % (describe(name), value))
    return int(value)
