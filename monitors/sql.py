"""Model rows read and written with plain SQL, for the hot paths (ping ingest).

Building an ORM statement costs more CPU than PostgreSQL spends running a simple
one (bench/README.md, "Ping ingest"), so the ping path writes its few statements
as SQL text, the same on PostgreSQL and SQLite, and turns rows into model
instances itself. Values go through each field's ``get_db_prep_save`` on the way
in and through the backend's and field's converters on the way out, exactly as
the ORM does, so the instances equal what a queryset returns (aware UTC
datetimes, ``UUID`` and ``Decimal`` values, booleans on SQLite).

On PostgreSQL these statements bind their parameters on the server (Django's own
cursors bind on the client, which cannot prepare), so psycopg prepares a
statement once it has run ``prepare_threshold`` times on a connection (the
``DATABASES`` option, set in ``cronradar/settings.py``) and PostgreSQL no longer
parses and plans it for every ping; and they read results in binary, which
psycopg loads for less CPU than text (timestamps above all; ``jsonb`` and
``inet`` columns are read as text, as Django's converters expect).

A prepared statement soon runs a *generic* plan, made without the parameters'
values: write statements whose best plan does not depend on them (constants
that select a partial index in the SQL text, not in the parameters; no OR
across columns that only a plan for the values at hand could turn into a
``BitmapOr``).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model
from psycopg.pq import Format


def _db():
    """The connection itself: ``django.db.connection`` is a proxy that looks it up
    again for every attribute (a ping prepares some thirty values through it)."""
    return connections[DEFAULT_DB_ALIAS]


@cache
def _server_binding_cursor():  # only importable with psycopg installed
    from django.db.backends.postgresql.base import ServerBindingCursor

    return ServerBindingCursor


def _cursor(db):
    """A cursor of ``db`` (Django's wrapper: errors, query logging) for this
    module's statements: on PostgreSQL one that binds on the server and reads
    results in binary (module docstring)."""
    if db.vendor != "postgresql":
        return db.cursor()
    db.ensure_connection()
    cursor = _server_binding_cursor()(db.connection)
    cursor.format = Format.BINARY
    return db._prepare_cursor(cursor)


# columns read as their text: what Django's converters expect (its own cursors read
# text, where it loads these types as strings; in binary psycopg would parse them)
_AS_TEXT = ("jsonb", "inet", "cidr")


@cache
def _columns(model: type[Model], vendor: str) -> tuple[tuple[str, ...], str]:
    """(attnames of the concrete fields, in order; their column list as SQL)."""
    fields = model._meta.concrete_fields
    return (tuple(f.attname for f in fields),
            ", ".join(connection.ops.quote_name(f.column)
                      + ("::text" if f.db_type(connection) in _AS_TEXT else "")
                      for f in fields))


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
    db = _db()
    names, cols = _columns(model, db.vendor)
    extra = extra or {}
    more = "".join(f", ({expr})" for expr in extra.values())
    conv = _converters(model, db.vendor)
    with _cursor(db) as cur:
        cur.execute(f"SELECT {cols}{more} FROM {model._meta.db_table} WHERE {where} {suffix}",
                    params)
        rows = cur.fetchall()
    out = []
    for row in rows:
        values = list(row[:len(names)])
        for i, (col, fns) in conv:
            for fn in fns:
                values[i] = fn(values[i], col, db)
        obj = model.from_db(db.alias, names, values)
        for name, value in zip(extra, row[len(names):], strict=True):
            setattr(obj, name, value)
        out.append(obj)
    return out


@cache
def _field(model: type[Model], attname: str):
    return next(f for f in model._meta.concrete_fields if f.attname == attname)


def prep(model: type[Model], attname: str, value):
    """``value`` as the database driver takes it for ``model``'s field ``attname``."""
    return _field(model, attname).get_db_prep_save(value, _db())


def update_statement(obj: Model, fields: Iterable[str],
                     returning: dict[str, str] | None = None) -> tuple[str, list]:
    """(SQL, params) of the ``UPDATE`` that writes ``fields`` (attnames) of the
    saved instance ``obj``, with ``RETURNING`` the expressions of ``returning``
    (attribute name -> SQL without placeholders) when given."""
    model, fields, db = type(obj), list(fields), _db()
    sets = ", ".join(f"{_field(model, f).column} = %s" for f in fields)
    more = f" RETURNING {', '.join(f'({e})' for e in returning.values())}" if returning else ""
    return (f"UPDATE {model._meta.db_table} SET {sets} WHERE id = %s{more}",
            [_field(model, f).get_db_prep_save(getattr(obj, f), db) for f in fields] + [obj.pk])


def update(obj: Model, fields: Iterable[str], returning: dict[str, str] | None = None) -> None:
    """Write ``fields`` (attnames) of the saved instance ``obj``. ``returning``:
    attribute name -> an SQL expression (no placeholders) read in the same
    statement (``UPDATE ... RETURNING``) and set on ``obj``."""
    row = fetchone(*update_statement(obj, fields, returning))
    for name, value in zip(returning or (), row or (), strict=True):
        setattr(obj, name, value)


def update_many(objs: Sequence[Model], fields: Iterable[str]) -> None:
    """:func:`update` for several saved instances of one model, sent together
    (``executemany``: psycopg pipelines them; Django's ``bulk_update`` builds a
    CASE per field and row, which costs more than the updates)."""
    if not objs:
        return
    model, fields, db = type(objs[0]), list(fields), _db()
    sets = ", ".join(f"{_field(model, f).column} = %s" for f in fields)
    with _cursor(db) as cur:
        cur.executemany(f"UPDATE {model._meta.db_table} SET {sets} WHERE id = %s",
                        [[_field(model, f).get_db_prep_save(getattr(o, f), db)
                          for f in fields] + [o.pk] for o in objs])


def insert_statement(obj: Model, fields: Sequence[str],
                     exprs: dict[str, str] | None = None) -> tuple[str, list]:
    """(SQL, params) of ``INSERT ... RETURNING id`` of the unsaved ``obj`` with
    ``fields`` (attnames; the others take their database defaults). ``exprs``:
    attname -> an SQL expression (no placeholders) inserted instead of the value."""
    model, exprs, db = type(obj), exprs or {}, _db()
    cols = ", ".join(_field(model, f).column for f in fields)
    return (f"INSERT INTO {model._meta.db_table} ({cols}) "
            f"VALUES ({', '.join(exprs.get(f, '%s') for f in fields)}) RETURNING id",
            [_field(model, f).get_db_prep_save(getattr(obj, f), db)
             for f in fields if f not in exprs])


def insert(obj: Model, fields: Sequence[str]) -> None:
    """Insert the unsaved ``obj`` with ``fields`` (attnames; the others take their
    database defaults) and set its ``pk`` (``INSERT ... RETURNING id``)."""
    saved(obj, fetchone(*insert_statement(obj, fields))[0])


def saved(obj: Model, pk: int) -> None:
    """Mark ``obj`` as the row ``pk`` that was just inserted."""
    obj.pk = pk
    obj._state.adding, obj._state.db = False, DEFAULT_DB_ALIAS


def fetchone(statement: str, params: Sequence) -> tuple | None:
    """Run ``statement`` (SQL with ``%s`` placeholders for ``params``, database
    values) on this module's cursor; its first row (None: no row, or none returned)."""
    with _cursor(_db()) as cur:
        cur.execute(statement, params)
        return cur.fetchone() if cur.description else None
