"""Model rows read and written with plain SQL, for the hot paths (ping ingest).

Building an ORM statement costs more CPU than PostgreSQL spends running a simple
one (bench/README.md, "Ping ingest"), so the ping path writes its few statements
as SQL text, the same on PostgreSQL and SQLite, and turns rows into model
instances itself. Values go through each field's ``get_db_prep_save`` on the way
in and through the backend's and field's converters on the way out, exactly as
the ORM does, so the instances equal what a queryset returns (aware UTC
datetimes, ``UUID`` and ``Decimal`` values, booleans on SQLite).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model


@cache
def _columns(model: type[Model]) -> tuple[tuple[str, ...], str]:
    """(attnames of the concrete fields, in order; their column list as SQL)."""
    fields = model._meta.concrete_fields
    return (tuple(f.attname for f in fields),
            ", ".join(connection.ops.quote_name(f.column) for f in fields))


@cache
def _converters(model: type[Model], vendor: str) -> tuple[tuple[int, tuple], ...]:
    """(column index, converter functions) for the columns that need converting."""
    out = []
    for i, field in enumerate(model._meta.concrete_fields):
        col = field.get_col(model._meta.db_table)
        fns = (connection.ops.get_db_converters(col) + col.get_db_converters(connection))
        if fns:
            out.append((i, (col, tuple(fns))))
    return tuple(out)


def select(model: type[Model], where: str, params: Sequence, suffix: str = "",
           extra: dict[str, str] | None = None) -> list:
    """Instances of ``model`` for ``SELECT <all columns> FROM <table> WHERE <where>
    <suffix>`` (``where`` and ``suffix`` are SQL with ``%s`` placeholders for
    ``params``, which must already be database values: see :func:`prep`).
    ``extra``: attribute name -> an SQL expression (no placeholders) selected too
    and set on each instance as it comes from the driver."""
    names, cols = _columns(model)
    extra = extra or {}
    more = "".join(f", ({expr})" for expr in extra.values())
    conv = _converters(model, connection.vendor)
    with connection.cursor() as cur:
        cur.execute(f"SELECT {cols}{more} FROM {model._meta.db_table} WHERE {where} {suffix}",
                    params)
        rows = cur.fetchall()
    out = []
    for row in rows:
        values = list(row[:len(names)])
        for i, (col, fns) in conv:
            for fn in fns:
                values[i] = fn(values[i], col, connection)
        obj = model.from_db(connection.alias, names, values)
        for name, value in zip(extra, row[len(names):], strict=True):
            setattr(obj, name, value)
        out.append(obj)
    return out


@cache
def _field(model: type[Model], attname: str):
    return next(f for f in model._meta.concrete_fields if f.attname == attname)


def prep(model: type[Model], attname: str, value):
    """``value`` as the database driver takes it for ``model``'s field ``attname``."""
    return _field(model, attname).get_db_prep_save(value, connection)


def where_in(model: type[Model], attname: str, values: Sequence, alias: str = ""
             ) -> tuple[str, list]:
    """(SQL, params) of the condition "``model``'s field ``attname`` is one of
    ``values``" (model values; at most a few hundred on SQLite, whose parameter
    limit is 999); ``alias``: the table's name or alias in the statement, if it
    must be qualified. PostgreSQL: ``= ANY`` of one array (psycopg parses
    statements of more than 50 parameters anew every time, and dumps each)."""
    field = _field(model, attname)
    column = f"{alias}.{field.column}" if alias else field.column
    db = connections[DEFAULT_DB_ALIAS]
    prepped = [field.get_db_prep_save(v, db) for v in values]
    if db.vendor == "postgresql":
        return f"{column} = ANY((%s)::{_pg_type(field)}[])", [prepped]
    return f"{column} IN ({', '.join(['%s'] * len(prepped))})", prepped


def update(obj: Model, fields: Iterable[str], returning: dict[str, str] | None = None) -> None:
    """Write ``fields`` (attnames) of the saved instance ``obj``. ``returning``:
    attribute name -> an SQL expression (no placeholders) read in the same
    statement (``UPDATE ... RETURNING``) and set on ``obj``."""
    model, fields = type(obj), list(fields)
    sets = ", ".join(f"{_field(model, f).column} = %s" for f in fields)
    more = f" RETURNING {', '.join(f'({e})' for e in returning.values())}" if returning else ""
    with connection.cursor() as cur:
        cur.execute(f"UPDATE {model._meta.db_table} SET {sets} WHERE id = %s{more}",
                    [prep(model, f, getattr(obj, f)) for f in fields] + [obj.pk])
        if returning:
            for name, value in zip(returning, cur.fetchone(), strict=True):
                setattr(obj, name, value)


def update_many(objs: Sequence[Model], fields: Iterable[str]) -> None:
    """:func:`update` for several saved instances of one model, sent together.
    Instances whose ``fields`` hold equal values (hashable model values) share
    one ``UPDATE ... WHERE id IN ...`` (a burst of monitors on one schedule is
    one statement); the others go as one ``executemany`` (psycopg pipelines it;
    Django's ``bulk_update`` builds a CASE per field and row, which costs more
    than the updates). Not in the objects' order: the caller holds the rows' locks."""
    if not objs:
        return
    model, fields = type(objs[0]), list(fields)
    groups: dict[tuple, list] = {}
    for o in objs:
        groups.setdefault(tuple(getattr(o, f) for f in fields), []).append(o.pk)
    sets = ", ".join(f"{_field(model, f).column} = %s" for f in fields)
    update = f"UPDATE {model._meta.db_table} SET {sets}"
    alone = []
    with connection.cursor() as cur:
        for values, ids in groups.items():
            prepped = [prep(model, f, v) for f, v in zip(fields, values, strict=True)]
            if len(ids) == 1:
                alone.append([*prepped, ids[0]])
                continue
            for i in range(0, len(ids), IN_LIMIT):
                where, params = where_in(model, "id", ids[i:i + IN_LIMIT])
                cur.execute(f"{update} WHERE {where}", [*prepped, *params])
        if alone:
            cur.executemany(f"{update} WHERE id = %s", alone)


IN_LIMIT = 500  # ids in one IN list (SQLite takes 999 parameters in all)


def insert(obj: Model, fields: Sequence[str]) -> None:
    """Insert the unsaved ``obj`` with ``fields`` (attnames; the others as
    :func:`insert_many` fills them) and set its ``pk`` (``INSERT ... RETURNING id``)."""
    obj.pk = insert_many(type(obj), fields, [[getattr(obj, f) for f in fields]])[0]
    obj._state.adding, obj._state.db = False, connection.alias


def insert_many(model: type[Model], fields: Sequence[str], rows: Sequence[Sequence]
                ) -> list[int]:
    """Insert ``rows`` of ``model`` (each the model values of ``fields``, attnames,
    in that order); returns the new ids in row order.

    The other fields take their model defaults (``Field.get_default``; a callable
    one is called per row, as ``bulk_create`` does), or the database's (NULL) when
    they have none; no model instances are built and no signals sent. Of several
    rows, a column (but the first) whose values are all the same (:func:`_all_same`)
    is prepared and sent once. Several rows on PostgreSQL: one ``INSERT ...
    SELECT FROM UNNEST`` with an array per other column (PostgreSQL plans it
    faster than many ``VALUES`` rows, and psycopg parses its text once); else
    multi-row ``VALUES``, split into several statements at SQLite's parameter
    limit."""
    if not rows:
        return []
    db = connections[DEFAULT_DB_ALIAS]
    given, per_row, fixed = _insert_columns(model, tuple(fields))
    columns = [(f, [row[i] for row in rows]) for i, f in enumerate(given)]
    columns += [(f, [f.get_default() for _ in rows]) for f in per_row]
    varying, same = columns[:1], [(f, f.get_default()) for f in fixed]
    for f, values in columns[1:]:
        if len(rows) > 1 and _all_same(f, values):
            same.append((f, values[0]))
        else:
            varying.append((f, values))
    varying = [(f, [f.get_db_prep_save(v, db) for v in values]) for f, values in varying]
    same = [(f, f.get_db_prep_save(v, db)) for f, v in same]
    table = db.ops.quote_name(model._meta.db_table)
    cols = ", ".join(db.ops.quote_name(f.column) for f, _ in varying + same)
    consts = [v for _, v in same]
    with db.cursor() as cur:
        if db.vendor == "postgresql" and len(rows) > 1:
            cur.execute(
                f"INSERT INTO {table} ({cols}) SELECT *"
                f"{''.join(f', (%s)::{_pg_type(f)}' for f, _ in same)} FROM UNNEST("
                f"{', '.join(f'(%s)::{_pg_type(f)}[]' for f, _ in varying)}) RETURNING id",
                [*consts, *(values for _, values in varying)])
            return [r[0] for r in cur.fetchall()]
        marks = f"({', '.join(['%s'] * (len(varying) + len(same)))})"
        size = max(1, db.ops.bulk_batch_size([f for f, _ in varying + same], rows))
        ids = []
        for i in range(0, len(rows), size):
            part = range(i, min(i + size, len(rows)))
            cur.execute(f"INSERT INTO {table} ({cols}) VALUES "
                        f"{', '.join([marks] * len(part))} RETURNING id",
                        [v for j in part for v in (*(vs[j] for _, vs in varying), *consts)])
            ids += [r[0] for r in cur.fetchall()]
    return ids


def _all_same(field, values: list) -> bool:
    """Whether every value of ``values`` is written as the first one: equal, and
    for JSON equal ``repr`` too (``1 == 1.0 == True`` are three JSON values)."""
    if values.count(values[0]) != len(values):
        return False
    if field.get_internal_type() != "JSONField":
        return True
    first = repr(values[0])
    return all(repr(v) == first for v in values)


@cache
def _insert_columns(model: type[Model], fields: tuple[str, ...]) -> tuple[list, list, list]:
    """(the fields named, the others with a callable default, the others with a
    fixed one) for :func:`insert_many`."""
    given = [_field(model, f) for f in fields]
    rest = [f for f in model._meta.concrete_fields
            if f.has_default() and not f.primary_key and f.attname not in fields]
    return (given, [f for f in rest if callable(f.default)],
            [f for f in rest if not callable(f.default)])


@cache
def _pg_type(field) -> str:
    """The PostgreSQL column type of ``field`` for a cast, without its length
    (``varchar``)."""
    return field.db_type(connections[DEFAULT_DB_ALIAS]).split("(")[0]
