"""The manifest and JSON readers: every `env:` list of a Kubernetes manifest, `ncclgen env --format json`."""

from __future__ import annotations

from ..errors import UserError


def parse_json(text: str, name: str) -> list:
    from ..load import yamlio

    doc = yamlio.load_json(text, name)
    env = doc.get("env") if isinstance(doc, dict) else None
    if not isinstance(env, list):
        raise UserError('expected a JSON object with an "env" list (ncclgen env --format json)', file=name, path="env")
    # Lines are found by searching forward for each name, counting newlines incrementally (one pass over
    # the text in all); a name written with JSON escapes is not found, and later ones get no line.
    out, pos, line, counted = [], 0, 1, 0
    for i, item in enumerate(env):
        found = (
            text.find(f'"{item["name"]}"', pos)
            if pos >= 0 and isinstance(item, dict) and isinstance(item.get("name"), str)
            else -1
        )
        if found >= 0:
            line += text.count("\n", counted, found)
            counted, pos = found, found + 1
        else:
            pos = -1
        where = line if found >= 0 else None
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise UserError('expected an object with a string "name"', file=name, path=f"env[{i}]", line=line)
        value = item.get("value")
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise UserError("expected a string value", file=name, path=f"env[{i}].value", line=line)
        out.append((item["name"], str(value), where))
    return out


def parse_manifest(text: str, name: str) -> tuple[list, list]:
    """Every `env:` list of {name, value} in every document, one list each; valueFrom has no static value.

    Read from libyaml's event stream in one pass (no node graph): linear in the input, nesting deeper
    than yamlio.MAX_DEPTH refused as it is met (libyaml's recursive composer crashes on it), and an
    alias is never expanded (no alias-bomb blow-up).
    """
    import yaml

    from ..load import yamlio

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    out: list = []
    # One frame per open mapping/sequence: [kind, key or None, expecting a key, env group or None, item]
    stack: list[list] = []
    try:
        for ev in yaml.parse(text, Loader=loader):
            top = stack[-1] if stack else None
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= yamlio.MAX_DEPTH:
                    m = ev.start_mark
                    raise UserError(
                        f"nested more than {yamlio.MAX_DEPTH} levels deep", file=name, line=m.line + 1, col=m.column + 1
                    )
                group = item = None
                if top is not None and top[0] == "map" and not top[2]:
                    if top[1] == "env" and isinstance(ev, yaml.SequenceStartEvent):
                        group = []
                        out.append(group)
                    top[2] = True  # this container is the value: next is a key
                elif (
                    top is not None
                    and top[0] == "seq"
                    and top[3] is not None
                    and isinstance(ev, yaml.MappingStartEvent)
                ):
                    item = {}  # an item of an env list
                stack.append(["map" if isinstance(ev, yaml.MappingStartEvent) else "seq", None, True, group, item])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frame = stack.pop()
                item = frame[4]
                if item is not None and "name" in item:
                    (n, line), value = item["name"], item.get("value", (None, 0))[0]
                    stack[-1][3].append((n, value, line))
            elif isinstance(ev, (yaml.ScalarEvent, yaml.AliasEvent)):
                if top is None or top[0] != "map":
                    continue
                if top[2]:  # a key
                    top[1] = ev.value if isinstance(ev, yaml.ScalarEvent) else None
                    top[2] = False
                else:  # a scalar value of key top[1]
                    if top[4] is not None and top[1] in ("name", "value") and isinstance(ev, yaml.ScalarEvent):
                        top[4].setdefault(top[1], (ev.value, ev.start_mark.line + 1))
                    top[2] = True
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise UserError(
            f"YAML syntax error: {exc.problem or exc.context}",
            file=name,
            line=mark.line + 1 if mark else None,
            col=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise yamlio.yaml_error(exc, text, name) from None
    return out, []
