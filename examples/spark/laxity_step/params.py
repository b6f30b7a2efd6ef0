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

A batch of a query over several inputs (spec.inputs, a join) has no input
or slice keys of its own. Instead it has interval-end, the instant (RFC
3339) at which every input was cut, and, for each input named <input> (a
DNS label), the keys <input>.from-tuple and <input>.to-tuple (the input's
tuples [from, to), numbered from the window's start on that input),
<input>.input (its location, when the query gives one) and the input's own
slice keys, such as <input>.kafka-starting-offsets; the Spark settings are
spark.laxity.<input>.<key>, with no camel case. Its from-tuple and to-tuple
count the tuples of all the inputs together.

parse() takes both (either may be absent) and insists they agree, so a job
that reads one form cannot silently differ from one that reads the other.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Set, Tuple

ARGUMENT_PREFIX = "--laxity-"
CONF_PREFIX = "spark.laxity."

BATCH, PARTIAL, FINAL = "batch", "partial", "final"
KINDS = (BATCH, PARTIAL, FINAL)

# Argument name -> Spark setting name, where they differ.
_CONF_NAMES = {"from-tuple": "fromTuple", "to-tuple": "toTuple"}
_CONTRACT = ("query", "step", "index", "attempt", "from-tuple", "to-tuple", "inputs", "input", "output")
_DECIMAL = re.compile(r"^(0|[1-9][0-9]*)$")

# A batch over several inputs: the instant every input was cut at, and the
# keys each input has besides its own slice's (<input>.<key>).
INTERVAL_END = "interval-end"
INPUT_FROM_TUPLE, INPUT_TO_TUPLE, INPUT_LOCATION = "from-tuple", "to-tuple", "input"
# An input's name is a DNS label (spec.inputs[].name), so it never holds
# the dot that ends it in a key.
_INPUT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# The keys of an input's Kafka slice (slices.KAFKA_*): all or none. An
# error names the last one given before the first missing.
_KAFKA_KEYS = ("kafka-topic", "kafka-starting-offsets", "kafka-ending-offsets")
# RFC 3339, as Go's time.RFC3339Nano writes it (UTC, Z) or with an offset.
_INSTANT = re.compile(
    r"^([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?(Z|[+-]([0-9]{2}):([0-9]{2}))$"
)


class ParameterError(ValueError):
    """A step parameter that is missing, malformed or contradicted."""


@dataclass(frozen=True)
class JoinedInput:
    """One input of a batch over several: what the batch reads of it."""

    name: str
    # The input's tuples [from_tuple, to_tuple), numbered from the window's
    # start on this input; equal when the batch holds none of it.
    from_tuple: int
    to_tuple: int
    # The input's location (spec.inputs[].location), or None.
    location: Optional[str] = None
    # The input's own slice (its Kafka offsets, ...), by key without the
    # input's name: what a batch of this input alone would have.
    slice: Dict[str, str] = field(default_factory=dict)

    def key(self, key: str) -> str:
        """The parameter name of one of the input's keys."""
        return input_key(self.name, key)


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
    # A batch over several inputs: each input, by name order, and the
    # instant they were all cut at (as laxity wrote it); (), None for a
    # batch of one input and for merges.
    joined: Tuple[JoinedInput, ...] = ()
    interval_end: Optional[str] = None

    def results(self) -> List[Tuple[str, str]]:
        """(query, output) of every query the step computes a result for:
        each member of a shared batch, else the step's own query."""
        if self.members:
            return [(m, self.outputs[m]) for m in self.members]
        return [(self.query, self.output)]

    @property
    def is_merge(self) -> bool:
        return self.kind != BATCH


def input_key(input_name: Optional[str], key: str) -> str:
    """The parameter name of key: <input>.<key> for an input of a batch
    over several, key itself for a batch of one input (None)."""
    return key if input_name is None else "%s.%s" % (input_name, key)


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
        members, outputs = _members(args, settings, query, output)
        names = {n for n in (set(args) | set(settings)) - set(_CONTRACT) if n != "members" and not n.startswith(_MEMBER_OUTPUT)}
        if INTERVAL_END in names or any("." in n for n in names):
            interval_end, joined = _joined(args, settings, names, from_tuple, to_tuple)
            return Step(query, kind, index, attempt, output, from_tuple, to_tuple, None, (), {}, members, outputs,
                        joined, interval_end)
        locations = args.get("input", [])
        if len(locations) > 1:
            raise ParameterError("%s: a batch has one input location, got %d" % (describe("input"), len(locations)))
        location = _agree("input", locations[0] if locations else None, settings.get("input"))
        if location == "":
            raise ParameterError("%s: empty" % describe("input"))
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


def _joined(
    args: Dict[str, List[str]], settings: Dict[str, str], names: Set[str], from_tuple: int, to_tuple: int
) -> Tuple[str, Tuple[JoinedInput, ...]]:
    """The interval end and the inputs of a batch over several, from its
    parameters' names other than the contract's (names). Such a batch has
    only its inputs' keys, so that a job reading the single-input form
    cannot mistake it for one."""
    own = sorted(n for n in names if "." not in n and n != INTERVAL_END)
    if own:
        raise ParameterError(
            "%s: a batch over several inputs has no slice of its own: each input's keys are <input>.<key>" % describe(own[0])
        )
    if args.get("input") or settings.get("input") is not None:
        raise ParameterError(
            "%s: a batch over several inputs has no input location of its own: each input's is %s"
            % (describe("input"), describe(input_key("<input>", INPUT_LOCATION)))
        )
    interval_end = _single(args, settings, INTERVAL_END)
    if interval_end is None:
        raise ParameterError("%s: missing for a batch over several inputs" % describe(INTERVAL_END))
    _instant(interval_end, INTERVAL_END)
    keys: Dict[str, Dict[str, str]] = {}
    for name in sorted(names - {INTERVAL_END}):
        input_name, _, key = name.partition(".")
        if not _INPUT_NAME.match(input_name):
            raise ParameterError(
                "%s: %r is not an input name: want a DNS label (lower-case letters, digits and '-', "
                "a letter or digit at each end, at most 63)" % (describe(name), input_name)
            )
        if input_name == "output":
            # spark.laxity.output.<member> is a shared batch's member output.
            raise ParameterError("%s: an input named output cannot be told from a member's output" % describe(name))
        if not key:
            raise ParameterError("%s: want %s<input>.<key>=<value>" % (describe(name), ARGUMENT_PREFIX))
        value = _single(args, settings, name)
        assert value is not None
        keys.setdefault(input_name, {})[key] = value
    if len(keys) < 2:
        raise ParameterError(
            "%s: a batch over several inputs names two or more, got %s" % (describe(INTERVAL_END), ", ".join(keys) or "none")
        )
    joined = tuple(_joined_input(name, keys[name]) for name in sorted(keys))
    held = sum(i.to_tuple - i.from_tuple for i in joined)
    if held != to_tuple - from_tuple:
        raise ParameterError(
            "%s: the batch's tuples [%d, %d) are %d, but its inputs' ranges hold %d (%s)"
            % (
                describe("to-tuple"), from_tuple, to_tuple, to_tuple - from_tuple, held,
                ", ".join("%s %d" % (i.name, i.to_tuple - i.from_tuple) for i in joined),
            )
        )
    return interval_end, joined


def _joined_input(name: str, keys: Dict[str, str]) -> JoinedInput:
    """One input of a batch over several, from its keys (without its name)."""
    own = dict(keys)
    for key in (INPUT_FROM_TUPLE, INPUT_TO_TUPLE):
        if key not in own:
            raise ParameterError("%s: missing for input %s" % (describe(input_key(name, key)), name))
    from_tuple = _count(own.pop(INPUT_FROM_TUPLE), input_key(name, INPUT_FROM_TUPLE))
    to_tuple = _count(own.pop(INPUT_TO_TUPLE), input_key(name, INPUT_TO_TUPLE))
    if to_tuple < from_tuple:
        raise ParameterError(
            "%s: input %s's range [%d, %d) ends before it starts"
            % (describe(input_key(name, INPUT_TO_TUPLE)), name, from_tuple, to_tuple)
        )
    location = own.pop(INPUT_LOCATION, None)
    if location == "":
        raise ParameterError("%s: empty" % describe(input_key(name, INPUT_LOCATION)))
    given = [k for k in _KAFKA_KEYS if k in own]
    if given and len(given) < len(_KAFKA_KEYS):
        missing = [k for k in _KAFKA_KEYS if k not in own][0]
        raise ParameterError(
            "%s: missing, but %s is given: an input's Kafka slice has all three keys"
            % (describe(input_key(name, missing)), describe(input_key(name, given[-1])))
        )
    if given and any(k.startswith("objectstore-") for k in own):
        raise ParameterError(
            "%s: input %s has a Kafka slice and object-storage keys; it reads from one source"
            % (describe(input_key(name, sorted(k for k in own if k.startswith("objectstore-"))[0])), name)
        )
    return JoinedInput(name, from_tuple, to_tuple, location, own)


def _instant(value: str, name: str) -> None:
    """Checks value is an RFC 3339 instant that exists on the calendar."""
    m = _INSTANT.match(value)
    try:
        if m:
            year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
            datetime.datetime(year, month, day, hour, minute, second)
            if m.group(9) is not None and (int(m.group(9)) > 23 or int(m.group(10)) > 59):
                m = None
    except ValueError:
        m = None
    if not m:
        raise ParameterError(
            "%s: want an RFC 3339 instant such as 2026-12-01T00:06:15Z or 2026-12-01T00:06:14.975013732Z, got %r"
            % (describe(name), value)
        )


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
