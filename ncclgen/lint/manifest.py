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


class Scalar(str):
    """A YAML scalar with the line it starts on."""

    line: int = 0


def _where(mark) -> tuple[int | None, int | None]:
    """1-based line and column of a parser mark (the events of yaml.parse carry one; the stubs allow None)."""
    return (mark.line + 1, mark.column + 1) if mark else (None, None)


def _scalar(value: str, line: int) -> Scalar:
    out = Scalar(value)
    out.line = line
    return out


def parse_manifest(text: str, name: str) -> tuple[list, list]:
    """Every container's environment in every document: (one list of (name, value, line) per `env:`
    list, notes (line, variable or None, what) on what could not be read).

    An env list's `envFrom` a ConfigMap in the same input (a document, or an item of a List) brings that
    ConfigMap's `data` first (a later `env` entry wins, as in Kubernetes), with its `prefix`; a
    `valueFrom.configMapKeyRef` takes the key's value. A Secret, or a ConfigMap not in the input, is a
    note: not checked.
    """
    docs = _tree(text, name)
    maps = _config_maps(docs)
    groups: list = []
    notes: list = []
    for holder in _env_holders(docs):
        groups.append(_environment(holder, maps, notes))
    return groups, notes


def _tree(text: str, name: str) -> list:
    """The documents as dicts, lists and Scalars, read from libyaml's event stream in one pass: linear in
    the input, nesting deeper than yamlio.MAX_DEPTH refused as it is met (libyaml's recursive composer
    crashes on it), an alias never expanded (it reads as None: no alias-bomb blow-up)."""
    import yaml

    from ..load import yamlio, yamlparse

    loader = yamlparse.LOADER
    docs: list = []
    stack: list[list] = []  # [container, pending key, expecting a key]

    def attach(node) -> None:
        if not stack:
            docs.append(node)
            return
        top = stack[-1]
        if isinstance(top[0], list):
            top[0].append(node)
        elif top[2]:
            top[1], top[2] = node if isinstance(node, str) else None, False
        else:
            if top[1] is not None:
                top[0].setdefault(str(top[1]), node)
            top[1], top[2] = None, True

    try:
        for ev in yaml.parse(text, Loader=loader):
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= yamlio.MAX_DEPTH:
                    line, col = _where(ev.start_mark)
                    raise UserError(f"nested more than {yamlio.MAX_DEPTH} levels deep", file=name, line=line, col=col)
                node: dict | list = {} if isinstance(ev, yaml.MappingStartEvent) else []
                attach(node)
                stack.append([node, None, True])
            elif isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                stack.pop()
            elif isinstance(ev, yaml.ScalarEvent):
                attach(_scalar(ev.value, _where(ev.start_mark)[0] or 0))
            elif isinstance(ev, yaml.AliasEvent):
                attach(None)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        raise UserError(
            f"YAML syntax error: {exc.problem or exc.context}",
            file=name,
            line=mark.line + 1 if mark else None,
            col=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise yamlparse.yaml_error(exc, text, name) from None
    return docs


def _objects(docs: list):
    """Each top-level object, and each item of a `kind: List`."""
    for doc in docs:
        if isinstance(doc, dict) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            yield from (item for item in doc["items"] if isinstance(item, dict))
        elif isinstance(doc, dict):
            yield doc


def _config_maps(docs: list) -> dict[str, dict]:
    """ConfigMap name -> its `data` (key -> Scalar)."""
    out: dict[str, dict] = {}
    for obj in _objects(docs):
        meta = obj.get("metadata")
        if obj.get("kind") == "ConfigMap" and isinstance(meta, dict) and isinstance(meta.get("name"), str):
            data = obj.get("data")
            out[str(meta["name"])] = data if isinstance(data, dict) else {}
    return out


def _env_holders(docs: list) -> list[dict]:
    """Every mapping with an `env` or `envFrom` list (a container), in document order, iteratively."""
    out, todo = [], list(reversed(docs))
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            if isinstance(node.get("env"), list) or isinstance(node.get("envFrom"), list):
                out.append(node)
            todo.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            todo.extend(reversed(node))
    return out


def _line(node) -> int | None:
    return node.line if isinstance(node, Scalar) else None


def _environment(holder: dict, maps: dict[str, dict], notes: list) -> list:
    """One container's (name, value, line) list: its envFrom sources first, then its env entries."""
    out: list = []
    for source in holder.get("envFrom") or ():
        if isinstance(source, dict):
            _env_from(source, maps, out, notes)
    for item in holder.get("env") or ():
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        key = item["name"]
        value = item.get("value")
        if "valueFrom" in item:
            value = _value_from(key, item["valueFrom"], maps, notes)
        out.append((str(key), str(value) if isinstance(value, str) else None, _line(key)))
    return out


def _env_from(source: dict, maps: dict[str, dict], out: list, notes: list) -> None:
    prefix = str(source.get("prefix") or "")
    for kind in ("configMapRef", "secretRef"):
        ref = source.get(kind)
        if not isinstance(ref, dict):
            continue
        ref_name = ref.get("name")
        line = _line(ref_name)
        if kind == "secretRef":
            notes.append((line, None, f"envFrom secretRef {ref_name}: a Secret's values are not read"))
        elif ref_name not in maps:
            notes.append((line, None, f"envFrom configMapRef {ref_name}: the ConfigMap is not in this input"))
        else:
            for key, value in maps[str(ref_name)].items():
                out.append((prefix + key, str(value) if isinstance(value, str) else None, _line(value)))


def _value_from(key: str, source, maps: dict[str, dict], notes: list) -> str | None:
    """The value of a `valueFrom`: a configMapKeyRef in the input; anything else is a note."""
    line = _line(key)
    ref = source.get("configMapKeyRef") if isinstance(source, dict) else None
    if isinstance(ref, dict):
        data = maps.get(str(ref.get("name")))
        value = data.get(str(ref.get("key"))) if data is not None else None
        if isinstance(value, str):
            return value
        notes.append((line, key, f"{key}: configMapKeyRef {ref.get('name')}/{ref.get('key')} is not in this input"))
        return None
    what = next(iter(source), "valueFrom") if isinstance(source, dict) else "valueFrom"
    if what == "secretKeyRef":
        notes.append((line, key, f"{key}: a Secret's value (secretKeyRef) is not read"))
    else:
        notes.append((line, key, f"{key}: its value comes from {what} at run time"))
    return None
