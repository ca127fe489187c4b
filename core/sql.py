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
from contextlib import contextmanager
from datetime import datetime
from functools import cache, lru_cache
from operator import attrgetter, call

from django.db import DEFAULT_DB_ALIAS, connection, connections, router
from django.db.models import Model, signals
from django.db.models.base import ModelState
from psycopg.pq import ExecStatus, Format


def _db():
    """The connection itself: ``django.db.connection`` is a proxy that looks it up
    again for every attribute (a ping prepares some thirty values through it)."""
    return connections[DEFAULT_DB_ALIAS]


@cache
def vendor() -> str:
    """The default database's vendor (``"postgresql"``, ``"sqlite"``), looked up once:
    the settings fix it for the process's life, and ``connection.vendor`` costs 3-4
    us a time (Django's per-thread connection handler, asgiref's ``Local``), which a
    ping asked a dozen times."""
    return _db().vendor


@cache
def _server_binding_cursor():  # only importable with psycopg installed
    from django.db.backends.postgresql.base import ServerBindingCursor

    return ServerBindingCursor


@contextmanager
def _cursor(db):
    """A cursor of ``db`` (Django's wrapper: errors, query logging) for this
    module's statements: on PostgreSQL one that binds on the server and reads
    results in binary (module docstring). That one is kept for the connection's
    life: a new psycopg cursor sets up a loader for each column of its first
    result again (about 30 µs for a monitor's row)."""
    if db.vendor != "postgresql":
        with db.cursor() as cursor:
            yield cursor
        return
    db.ensure_connection()
    kept = getattr(db, "_cronradar_cursor", None)
    if kept is None or kept.connection is not db.connection or kept.closed:
        kept = _server_binding_cursor()(db.connection)
        kept.format = Format.BINARY
        db._cronradar_cursor = kept
    yield db._prepare_cursor(kept)


# columns read as their text: what Django's converters expect (its own cursors read
# text, where it loads these types as strings; in binary psycopg would parse them).
# inet: its output text (abbrev: "10.0.0.1", not the cast's "10.0.0.1/32")
_AS_TEXT = {"jsonb": "{}::text", "inet": "abbrev({})", "cidr": "{}::text"}


def read_as(field, column: str) -> str:
    """``column`` (SQL naming ``field``'s column) as this module's statements read
    it: its text for the types of :data:`_AS_TEXT`, what Django's converters
    expect of rows read by :func:`fetchall` in binary."""
    return _AS_TEXT.get(field.db_type(connection), "{}").format(column)


@cache
def _columns(model: type[Model], vendor: str) -> tuple[tuple[str, ...], str]:
    """(attnames of the concrete fields, in order; their column list as SQL)."""
    fields = model._meta.concrete_fields
    return (tuple(f.attname for f in fields),
            ", ".join(read_as(f, connection.ops.quote_name(f.column)) for f in fields))


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
    with _cursor(db) as cur:
        cur.execute(f"SELECT {cols}{more} FROM {model._meta.db_table} WHERE {where} {suffix}",
                    params)
        rows = cur.fetchall()
    out = []
    for row in rows:
        obj = _build(model, db, names, row[:len(names)])
        for name, value in zip(extra, row[len(names):], strict=True):
            setattr(obj, name, value)
        out.append(obj)
    return out


def new(model: type[Model], **values):
    """The unsaved instance ``model(**values)`` (``values``: field names, a foreign
    key given as its object or None, or attnames), built as ``Model.__init__``
    builds it (the fields' defaults, the related objects cached) without its walk
    of the fields: a third of the cost of a ping's run. A model with its own
    ``from_db`` or init signals (:func:`_plain`) goes through ``Model.__init__``.
    Raises TypeError for a name that is no field's."""
    if not _plain(model):
        return model(**values)
    static, dynamic, attnames, related = _defaults(model)
    obj = _blank(model)
    fields = obj.__dict__
    fields.update(static)
    for attname, default in dynamic:
        fields[attname] = default()
    for name, value in values.items():
        if name in attnames:
            fields[name] = value
        elif (field := related.get(name)) is not None:
            if value is None:
                fields[field.attname] = None
            else:  # as the foreign key's descriptor sets them
                fields[field.attname] = value.pk
                if obj._state.db is None:
                    obj._state.db = router.db_for_write(model, instance=value)
            field.set_cached_value(obj, value)
        else:
            raise TypeError(f"{model.__name__}() got an unexpected keyword argument {name!r}")
    return obj


@cache
def _defaults(model: type[Model]) -> tuple[dict, tuple, frozenset, dict]:
    """What :func:`new` starts an instance of ``model`` from: (attname -> default
    of the fields whose default is a value (Django shares that value too), the
    (attname, default maker) of those whose default is a callable, every attname,
    foreign key name -> field)."""
    static, dynamic = {}, []
    for f in model._meta.concrete_fields:
        if f.has_default() and callable(f.default):
            dynamic.append((f.attname, f.get_default))
        else:
            static[f.attname] = f.get_default()
    related = {f.name: f for f in model._meta.concrete_fields if f.is_relation}
    attnames = frozenset(f.attname for f in model._meta.concrete_fields)
    return static, tuple(dynamic), attnames, related


def columns(model: type[Model]) -> str:
    """The column list :func:`instance` takes, as SQL (``jsonb`` and ``inet`` columns
    cast to text), for statements of one's own."""
    return _columns(model, vendor())[1]


def instance(model: type[Model], values: Sequence):
    """The saved instance of ``model`` whose concrete columns, in :func:`columns`'s
    order, this module's cursor returned as ``values``."""
    db = _db()
    return _build(model, db, _columns(model, db.vendor)[0], values)


def _build(model: type[Model], db, names: tuple[str, ...], values: Sequence):
    values = list(values)
    for i, (col, fns) in _converters(model, db.vendor):
        for fn in fns:
            values[i] = fn(values[i], col, db)
    return loaded(model, names, values, db.alias)


def loaded(model: type[Model], names: Sequence[str], values: Sequence,
           alias: str = DEFAULT_DB_ALIAS):
    """``model.from_db(alias, names, values)``: the saved instance whose attnames
    ``names`` hold ``values`` (model values: nothing converted). For a model
    without its own ``from_db`` or init signals, without ``Model.__init__``'s walk
    of the fields (a fifth of building a ping's monitor and runs)."""
    if not _plain(model):
        return model.from_db(alias, names, values)
    obj = _blank(model)
    obj._state.adding, obj._state.db = False, alias
    obj.__dict__.update(zip(names, values, strict=True))
    return obj


def _blank(model: type[Model]):
    """An instance of ``model`` with a fresh ``_state`` and no field set (for
    :func:`new` and :func:`loaded`, which set them)."""
    obj = model.__new__(model)
    obj._state = ModelState()
    return obj


def _plain(model: type[Model]) -> bool:
    """Whether ``model.from_db`` is Django's and nothing listens to its
    ``pre_init``/``post_init`` (then :func:`_build` sets the attributes itself)."""
    return (model.from_db.__func__ is Model.from_db.__func__
            and not signals.pre_init.has_listeners(model)
            and not signals.post_init.has_listeners(model))


@cache
def _field(model: type[Model], attname: str):
    return next(f for f in model._meta.concrete_fields if f.attname == attname)


# Field classes whose get_db_prep_save returns a value of these exact types as it
# is, on every backend (None too): the ping path skips the call for them. Any other
# value or field takes the call. On PostgreSQL, integer fields wrap the int in the
# type the backend gives them (psycopg's Int2/Int4/Int8: the parameter types of a
# server-bound statement), and aware datetimes and UUIDs go as they are (psycopg
# adapts them; SQLite's backend turns them into text).
_AS_IS = {"AutoField": (int,), "BigAutoField": (int,), "IntegerField": (int,),
          "BigIntegerField": (int,), "SmallIntegerField": (int,),
          "PositiveIntegerField": (int,), "PositiveSmallIntegerField": (int,),
          "PositiveBigIntegerField": (int,), "BooleanField": (bool,),
          "CharField": (str,), "TextField": (str,)}


@cache
def _saver(model: type[Model], attname: str, vendor: str):
    """``value -> database value`` for ``model``'s field ``attname``: its
    ``get_db_prep_save``, done here for the values whose result is known
    (tests/test_sql.py compares the two for every field the ping path writes, and
    :func:`insert_many`'s rows with ``bulk_create``'s)."""
    from uuid import UUID

    field = _field(model, attname)
    target = field.target_field if field.is_relation else field
    kind = target.get_internal_type()
    as_is, wrap = _AS_IS.get(kind, ()), None
    if vendor == "postgresql":
        wrap = getattr(_db().ops, "integerfield_type_map", {}).get(kind)
        as_is = {"UUIDField": (UUID,), "DateTimeField": (datetime,)}.get(kind, as_is)
    if not type(target).__module__.startswith("django.db.models.fields"):
        as_is = ()  # a field class of our own: always ask it

    if kind == "GenericIPAddressField" and not as_is and type(target).__module__.startswith(
            "django.db.models.fields"):
        # an address as the driver takes it (PostgreSQL: an ipaddress object, parsed
        # anew each time) depends on the text alone: the same hosts ping again and again
        @lru_cache(maxsize=4096)
        def address(value: str):
            return field.get_db_prep_save(value, _db())

        def save_address(value, field=field, address=address):
            if type(value) is str:
                return address(value)
            return field.get_db_prep_save(value, _db())
        return save_address

    def save(value, field=field, as_is=as_is, wrap=wrap):
        if type(value) in as_is:
            if wrap is not None:
                return wrap(value)
            if not (as_is[0] is datetime and value.tzinfo is None):
                return value
        elif value is None and as_is:
            return None
        return field.get_db_prep_save(value, _db())
    return save


def prep(model: type[Model], attname: str, value):
    """``value`` as the database driver takes it for ``model``'s field ``attname``."""
    return _saver(model, attname, vendor())(value)


@cache
def _update_sql(model: type[Model], fields: tuple[str, ...],
                returning: tuple[str, ...]) -> str:
    sets = ", ".join(f"{_field(model, f).column} = %s" for f in fields)
    more = f" RETURNING {', '.join(f'({e})' for e in returning)}" if returning else ""
    return f"UPDATE {model._meta.db_table} SET {sets} WHERE id = %s{more}"


def update_statement(obj: Model, fields: Iterable[str],
                     returning: dict[str, str] | None = None) -> tuple[str, list]:
    """(SQL, params) of the ``UPDATE`` that writes ``fields`` (attnames) of the
    saved instance ``obj``, with ``RETURNING`` the expressions of ``returning``
    (attribute name -> SQL without placeholders) when given."""
    model, fields = type(obj), tuple(fields)
    get, savers = _savers(model, fields, vendor())
    return (_update_sql(model, fields, tuple((returning or {}).values())),
            [*map(call, savers, get(obj)), obj.pk])


@cache
def _savers(model: type[Model], fields: tuple[str, ...], vendor: str) -> tuple:
    """(``obj -> tuple of its fields' values``, the fields' savers, :func:`_saver`) for
    statements that write ``fields`` of a ``model`` instance: looked up once per
    shape, not once per field and statement."""
    if len(fields) > 1:
        get = attrgetter(*fields)
    else:  # attrgetter of one name gives the value, of none raises
        def get(obj):
            return tuple(getattr(obj, f) for f in fields)
    return get, tuple(_saver(model, f, vendor) for f in fields)


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
    prepped = list(map(_saver(model, attname, db.vendor), values))
    if db.vendor == "postgresql":
        return f"{column} = ANY((%s)::{_pg_type(field)}[])", [prepped]
    return f"{column} IN ({', '.join(['%s'] * len(prepped))})", prepped


def update(obj: Model, fields: Iterable[str], returning: dict[str, str] | None = None) -> None:
    """Write ``fields`` (attnames) of the saved instance ``obj``. ``returning``:
    attribute name -> an SQL expression (no placeholders) read in the same
    statement (``UPDATE ... RETURNING``) and set on ``obj``."""
    row = fetchone(*update_statement(obj, fields, returning))
    for name, value in zip(returning or (), row or (), strict=True):
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
    with _cursor(_db()) as cur:
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
VALUES_LIMIT = 900  # parameters in one update_from_values statement on SQLite (999 at most)


def update_from_values(model: type[Model], keys: Sequence[str], fields: Sequence[str],
                       rows: Sequence[Sequence], where: str = "", params: Sequence = ()
                       ) -> list[int]:
    """Write rows of ``model`` whose values differ from row to row, one statement a
    batch: on PostgreSQL ``UPDATE ... FROM UNNEST(<an array per column>) v``, one
    text whatever the number of rows, bound on the server (psycopg prepares it;
    arrays dumped in binary, as :func:`insert_many`'s); on SQLite ``WITH v(...) AS
    (VALUES ...) UPDATE ... FROM v``, split at its parameter limit
    (:data:`VALUES_LIMIT`).

    Each of ``rows`` holds model values (attnames): the ``keys`` first, then the
    ``fields``; a table row is updated where each of its ``keys`` columns equals
    the row's and ``where`` (SQL on the table's own columns, ``%s`` placeholders
    for ``params``, which must be database values: :func:`prep`) holds. The
    ``fields`` are set to the row's values. Returns the primary keys of the rows
    updated (a row whose keys no longer match is left as it is). ``keys`` should
    start with ``"id"``."""
    if not rows:
        return []
    db = _db()
    names = [*keys, *fields]
    table, width = model._meta.db_table, len(names)
    columns = [_field(model, n) for n in names]
    savers = [_saver(model, n, db.vendor) for n in names]
    aliases = [f"v_{n}" for n in names]  # never a table's column name: RETURNING id is plain
    sets = ", ".join(f"{c.column} = v.{a}" for c, a in zip(columns[len(keys):],
                                                            aliases[len(keys):], strict=True))
    match = " AND ".join(f"{table}.{c.column} = v.{a}" for c, a in zip(columns[:len(keys)],
                                                                       aliases, strict=False))
    condition = f"{match} AND ({where})" if where else match
    returning = f"RETURNING {table}.{model._meta.pk.column}"
    if db.vendor == "postgresql":
        arrays = ", ".join(f"(%b)::{_pg_type(c)}[]" for c in columns)
        return [pk for (pk,) in fetchall(
            f"UPDATE {table} SET {sets} FROM UNNEST({arrays}) AS v({', '.join(aliases)}) "
            f"WHERE {condition} {returning}",
            [*([fn(row[i]) for row in rows] for i, fn in enumerate(savers)), *params])]
    other = "(" + ", ".join(["%s"] * width) + ")"
    done: list[int] = []
    step = max(1, (VALUES_LIMIT - len(params)) // width)
    with _cursor(db) as cur:
        for i in range(0, len(rows), step):
            chunk = rows[i:i + step]
            cur.execute(f"WITH v({', '.join(aliases)}) AS (VALUES "
                        f"{', '.join([other] * len(chunk))}) "
                        f"UPDATE {table} SET {sets} FROM v WHERE {condition} {returning}",
                        [*(fn(v) for row in chunk for fn, v in zip(savers, row, strict=True)),
                         *params])
            done += [pk for (pk,) in cur.fetchall()]
    return done


def insert_many(model: type[Model], fields: Sequence[str], rows: Sequence[Sequence]
                ) -> list[int]:
    """Insert ``rows`` of ``model`` (each the model values of ``fields``, attnames,
    in that order); returns the new ids in row order.

    The other fields take their model defaults (``Field.get_default``; a callable
    one is called per row, as ``bulk_create`` does), or the database's (NULL) when
    they have none; no model instances are built and no signals sent. Of several
    rows, a column (but the first) whose values are all the same (:func:`_all_same`)
    is prepared and sent once. Several rows on PostgreSQL: one ``INSERT ...
    SELECT FROM UNNEST`` with an array per other column, bound on the server and
    sent in binary (PostgreSQL plans it faster than many ``VALUES`` rows, and
    psycopg dumps a binary array for a tenth of the CPU of quoting it as text);
    else multi-row ``VALUES``, split into several statements at SQLite's
    parameter limit."""
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
    varying = [(f, list(map(_saver(model, f.attname, db.vendor), values)))
               for f, values in varying]
    same = [(f, _saver(model, f.attname, db.vendor)(v)) for f, v in same]
    table = db.ops.quote_name(model._meta.db_table)
    cols = ", ".join(db.ops.quote_name(f.column) for f, _ in varying + same)
    consts = [v for _, v in same]
    with _cursor(db) as cur:
        if db.vendor == "postgresql" and len(rows) > 1:
            cur.execute(
                f"INSERT INTO {table} ({cols}) SELECT *"
                f"{''.join(f', (%s)::{_pg_type(f)}' for f, _ in same)} FROM UNNEST("
                f"{', '.join(f'(%b)::{_pg_type(f)}[]' for f, _ in varying)}) RETURNING id",
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


def insert_statement(obj: Model, fields: Sequence[str],
                     exprs: dict[str, str] | None = None) -> tuple[str, list]:
    """(SQL, params) of ``INSERT ... RETURNING id`` of the unsaved ``obj`` with
    ``fields`` (attnames; the others take their database defaults). ``exprs``:
    attname -> an SQL expression (no placeholders) inserted instead of the value."""
    model, exprs = type(obj), exprs or {}
    valued = tuple(f for f in fields if f not in exprs) if exprs else tuple(fields)
    get, savers = _savers(model, valued, vendor())
    return (_insert_sql(model, tuple(fields), tuple(exprs.items())),
            list(map(call, savers, get(obj))))


@cache
def _insert_sql(model: type[Model], fields: tuple[str, ...],
                exprs: tuple[tuple[str, str], ...]) -> str:
    cols = ", ".join(_field(model, f).column for f in fields)
    given = dict(exprs)
    return (f"INSERT INTO {model._meta.db_table} ({cols}) "
            f"VALUES ({', '.join(given.get(f, '%s') for f in fields)}) RETURNING id")


def insert(obj: Model, fields: Sequence[str]) -> None:
    """Insert the unsaved ``obj`` with ``fields`` (attnames; the others take their
    database defaults) and set its ``pk`` (``INSERT ... RETURNING id``)."""
    saved(obj, fetchone(*insert_statement(obj, fields))[0])


def saved(obj: Model, pk: int) -> None:
    """Mark ``obj`` as the row ``pk`` that was just inserted."""
    obj.pk = pk
    obj._state.adding, obj._state.db = False, DEFAULT_DB_ALIAS


def fetchall(statement: str, params: Sequence) -> list[tuple]:
    """Run ``statement`` (as :func:`fetchone`) and return all its rows."""
    with _cursor(_db()) as cur:
        cur.execute(statement, params)
        return cur.fetchall()


def fetchone(statement: str, params: Sequence) -> tuple | None:
    """Run ``statement`` (SQL with ``%s`` placeholders for ``params``, database
    values) on this module's cursor; its first row (None: no row, or none returned)."""
    with _cursor(_db()) as cur:
        cur.execute(statement, params)
        result = getattr(cur.cursor, "pgresult", None)  # psycopg: not cur.description,
        if result is not None:  # which makes an object for each column
            return cur.fetchone() if result.status == ExecStatus.TUPLES_OK else None
        return cur.fetchone() if cur.description else None
