/* structop_runtime._native: the loop of an op function's eager call that
 * Python is slow at, in C against the limited API (one build serves every
 * CPython from 3.10; the file is named _native.abi3.so).
 *
 * record_columns(records, cls, n[, override]) takes a list of records
 * (`Rec[] items`) apart into the op's flat arguments: n tuples, tuple k
 * holding the k-th flat value (`_structop_flat`, which each record's
 * __post_init__ sets: its leaves in slot order) of every record, in the
 * records' order; then a flag, `override` or'ed with whether some value's
 * exact type is not one of plain_types() (_loading._PLAIN_TYPES: plain
 * tensors, None, bool, int, float, str): such a value may define
 * __torch_function__, so the call must take the OpOverload.
 * The generated function calls it as
 *
 *     args_1, args_2, override = _rt.record_columns(items, Item, 2)
 *     args = (x, args_1, args_2)
 *     if override or _rt.has_torch_function(args): ...
 *
 * where it used to append every leaf of every record in a Python loop and
 * ask torch about each list of tensors. It raises TypeError for an item that
 * is not a `cls` (a subclass is one) or whose flat values are not n, and
 * lets AttributeError through for a record made without its __init__; the
 * op function's except clause then explains the call (_checks.py).
 * _loading._record_columns is the same in Python, used where this module
 * was not built (no Python headers).
 *
 * value_key(flat, keyed, kinds) makes a record's `_structop_key`, which its
 * generated __init__ sets: the values of its value leaves (the indices
 * `keyed` of its flat values) as one frozenset, frozenset({(v1, v2, ...)}),
 * which torch.compile's Dynamo guards with one equality check where it
 * would guard each value read from the tuple on its own; None where a value
 * is not of its field's type (exactly; an int will do for a float) or is a
 * nan, which would compare unequal to itself. _loading._value_key is the
 * same in Python.
 *
 * set_record(record, names, values, flat[, keyed, kinds]) is the rest of
 * that __init__: it sets the fields, the flat values and the key with
 * object's own setattr (a frozen dataclass refuses the usual one), in one
 * call where Python would make one per attribute. _loading._set_record is
 * the same in Python. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject* flat_name; /* "_structop_flat", interned */

/* The exact types of values that define no __torch_function__ of their
 * own, as plain_types() set them (_loading._PLAIN_TYPES, the one list). */
#define MAX_PLAIN_TYPES 8
static PyObject* plain_types_[MAX_PLAIN_TYPES];
static Py_ssize_t plain_count;

/* Whether `value` can take the dispatcher's path without __torch_function__. */
static int plain(PyObject* value) {
  PyObject* type = (PyObject*)Py_TYPE(value);
  for (Py_ssize_t i = 0; i < plain_count; ++i) {
    if (type == plain_types_[i]) return 1;
  }
  return 0;
}

static PyObject* record_columns(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 3 && nargs != 4) {
    PyErr_Format(PyExc_TypeError, "record_columns() takes 3 or 4 arguments (%zd given)", nargs);
    return NULL;
  }
  PyObject* records = args[0];
  PyObject* cls = args[1];
  const Py_ssize_t n = PyLong_AsSsize_t(args[2]);
  if (n < 0) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "record_columns(): n < 0");
    return NULL;
  }
  int override = nargs == 4 ? PyObject_IsTrue(args[3]) : 0;
  if (override < 0) return NULL;
  /* A list or tuple as it is; any other iterable once through list(). */
  PyObject* items = (PyList_Check(records) || PyTuple_Check(records)) ? Py_NewRef(records)
                                                                      : PySequence_List(records);
  if (items == NULL) return NULL;
  const int is_list = PyList_Check(items);
  const Py_ssize_t count = is_list ? PyList_Size(items) : PyTuple_Size(items);
  PyObject* result = PyTuple_New(n + 1);
  if (result == NULL) goto failed;
  for (Py_ssize_t k = 0; k < n; ++k) {
    PyObject* column = PyTuple_New(count);
    if (column == NULL || PyTuple_SetItem(result, k, column) < 0) goto failed;
  }
  for (Py_ssize_t i = 0; i < count; ++i) {
    PyObject* item = is_list ? PyList_GetItem(items, i) : PyTuple_GetItem(items, i);
    if (item == NULL) goto failed;
    const int is_record = PyObject_IsInstance(item, cls);
    if (is_record < 0) goto failed;
    if (!is_record) {
      PyObject* want = PyObject_GetAttrString(cls, "__qualname__");
      PyObject* got = PyObject_GetAttrString((PyObject*)Py_TYPE(item), "__qualname__");
      if (want != NULL && got != NULL) {
        PyErr_Format(PyExc_TypeError, "item %zd: expected %S, got %S", i, want, got);
      }
      Py_XDECREF(want);
      Py_XDECREF(got);
      goto failed;
    }
    PyObject* flat = PyObject_GetAttr(item, flat_name);
    if (flat == NULL) goto failed;
    if (!PyTuple_Check(flat) || PyTuple_Size(flat) != n) {
      PyErr_Format(PyExc_TypeError, "item %zd: %U is not a tuple of %zd values", i, flat_name, n);
      Py_DECREF(flat);
      goto failed;
    }
    for (Py_ssize_t k = 0; k < n; ++k) {
      PyObject* value = PyTuple_GetItem(flat, k); /* borrowed */
      if (!override && !plain(value)) override = 1;
      Py_INCREF(value);
      PyTuple_SetItem(PyTuple_GetItem(result, k), i, value); /* steals value */
    }
    Py_DECREF(flat);
  }
  Py_DECREF(items);
  if (PyTuple_SetItem(result, n, PyBool_FromLong(override)) < 0) {
    Py_DECREF(result);
    return NULL;
  }
  return result;

failed:
  Py_DECREF(items);
  Py_XDECREF(result);
  return NULL;
}

/* Whether `value` fits `kind` (value_key): 'f' a float that is not nan, or
 * an int; 'i' an int; 'b' a bool; 's' a str; the upper case letter: the
 * same or None. Exact types: a subclass (a bool for an int, a SymInt)
 * may compare equal to a value of another type. */
static int fits(PyObject* value, char kind) {
  if (kind >= 'A' && kind <= 'Z') {
    if (value == Py_None) return 1;
    kind = (char)(kind - 'A' + 'a');
  }
  switch (kind) {
    case 'f':
      if (PyFloat_CheckExact(value)) {
        const double v = PyFloat_AsDouble(value);
        return v == v;
      }
      return PyLong_CheckExact(value);
    case 'i':
      return PyLong_CheckExact(value);
    case 'b':
      return PyBool_Check(value);
    case 's':
      return PyUnicode_CheckExact(value);
    default:
      return 0;
  }
}

static PyObject* value_key(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs != 3 || !PyTuple_Check(args[0]) || !PyTuple_Check(args[1]) ||
      !PyUnicode_Check(args[2])) {
    PyErr_SetString(PyExc_TypeError, "value_key() takes a tuple, a tuple of indices and a str");
    return NULL;
  }
  PyObject* flat = args[0];
  PyObject* keyed = args[1];
  const Py_ssize_t n = PyTuple_Size(keyed);
  Py_ssize_t length = 0;
  const char* kinds = PyUnicode_AsUTF8AndSize(args[2], &length);
  if (kinds == NULL) return NULL;
  if (length != n) {
    PyErr_SetString(PyExc_ValueError, "value_key(): one kind per index");
    return NULL;
  }
  PyObject* values = PyTuple_New(n);
  if (values == NULL) return NULL;
  for (Py_ssize_t j = 0; j < n; ++j) {
    const Py_ssize_t i = PyLong_AsSsize_t(PyTuple_GetItem(keyed, j));
    if (i == -1 && PyErr_Occurred()) goto failed;
    PyObject* value = PyTuple_GetItem(flat, i); /* borrowed; IndexError if out of range */
    if (value == NULL) goto failed;
    if (!fits(value, kinds[j])) {
      Py_DECREF(values);
      Py_RETURN_NONE;
    }
    PyTuple_SetItem(values, j, Py_NewRef(value)); /* steals the new reference */
  }
  PyObject* one = PyTuple_Pack(1, values);
  Py_DECREF(values);
  if (one == NULL) return NULL;
  PyObject* key = PyFrozenSet_New(one);
  Py_DECREF(one);
  return key;

failed:
  Py_DECREF(values);
  return NULL;
}

static PyObject* key_name; /* "_structop_key", interned */

static PyObject* set_record(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if ((nargs != 4 && nargs != 6) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) ||
      PyTuple_Size(args[1]) != PyTuple_Size(args[2]) || !PyTuple_Check(args[3])) {
    PyErr_SetString(
        PyExc_TypeError,
        "set_record() takes a record, a tuple of names, a tuple of as many values, "
        "a tuple of flat values and optionally value_key's indices and kinds");
    return NULL;
  }
  PyObject* record = args[0];
  const Py_ssize_t n = PyTuple_Size(args[1]);
  /* Object's own setattr, as a frozen dataclass's __init__ calls it: the
   * values stay in the instance's inline storage, which attribute loads read
   * fastest (a store through __dict__ makes a dict of them). */
  for (Py_ssize_t i = 0; i < n; ++i) {
    if (PyObject_GenericSetAttr(record, PyTuple_GetItem(args[1], i), PyTuple_GetItem(args[2], i)) <
        0)
      return NULL;
  }
  if (PyObject_GenericSetAttr(record, flat_name, args[3]) < 0) return NULL;
  if (nargs == 6) {
    PyObject* const key_args[3] = {args[3], args[4], args[5]};
    PyObject* key = value_key(NULL, key_args, 3);
    if (key == NULL) return NULL;
    const int set = PyObject_GenericSetAttr(record, key_name, key);
    Py_DECREF(key);
    if (set < 0) return NULL;
  }
  Py_RETURN_NONE;
}

static PyObject* plain_types(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
  (void)self;
  if (nargs > MAX_PLAIN_TYPES) {
    PyErr_Format(PyExc_TypeError, "plain_types() takes at most %d classes", MAX_PLAIN_TYPES);
    return NULL;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) {
    if (!PyType_Check(args[i])) {
      PyErr_SetString(PyExc_TypeError, "plain_types() takes classes");
      return NULL;
    }
  }
  for (Py_ssize_t i = 0; i < plain_count; ++i) Py_DECREF(plain_types_[i]);
  for (Py_ssize_t i = 0; i < nargs; ++i) plain_types_[i] = Py_NewRef(args[i]);
  plain_count = nargs;
  Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"record_columns",
     (PyCFunction)(void (*)(void))record_columns,
     METH_FASTCALL,
     "record_columns(records, cls, n, override=False) -> (column_1, ..., column_n, override):\n"
     "column k holds the k-th flat value (_structop_flat) of each record, in order;\n"
     "override is True when it was given true or some value may define\n"
     "__torch_function__."},
    {"value_key",
     (PyCFunction)(void (*)(void))value_key,
     METH_FASTCALL,
     "value_key(flat, keyed, kinds) -> frozenset or None: a record's guard key\n"
     "(_structop_key), frozenset({(flat[keyed[0]], ...)}), when each of those values\n"
     "fits its kind (kinds[j]: 'f' float but not nan, or int; 'i' int; 'b' bool;\n"
     "'s' str; upper case: or None); else None."},
    {"set_record",
     (PyCFunction)(void (*)(void))set_record,
     METH_FASTCALL,
     "set_record(record, names, values, flat[, keyed, kinds]): what a record's generated\n"
     "__init__ stores: each field (object.__setattr__), then _structop_flat = flat and,\n"
     "given keyed and kinds, _structop_key = value_key(flat, keyed, kinds)."},
    {"plain_types",
     (PyCFunction)(void (*)(void))plain_types,
     METH_FASTCALL,
     "plain_types(*types): the exact types of values that define no\n"
     "__torch_function__ of their own (record_columns' flag; _loading._PLAIN_TYPES)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "structop_runtime._native",
    .m_doc = "structop's eager-call helpers in C (see _native.c).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void) {
  flat_name = PyUnicode_InternFromString("_structop_flat");
  if (flat_name == NULL) return NULL;
  key_name = PyUnicode_InternFromString("_structop_key");
  if (key_name == NULL) return NULL;
  return PyModule_Create(&module);
}
