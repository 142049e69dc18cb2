/* serdes._ready: ready(value) -> an already-finished coroutine holding `value`.
 *
 * Why: an async serializer's common case (cached plan, no rules) has nothing to await, yet an `async def`
 * makes CPython create, start and free a coroutine per record (~750 bytecode-loop instructions, ~60 ns),
 * which is a tenth of a Protobuf serialize. An object of this type is created with one small allocation and
 * finishes at its first step: `await ready(v)` gives `v`. It implements the whole coroutine protocol
 * (__await__, send, throw, close), so asyncio.iscoroutine() accepts it and asyncio.create_task(),
 * ensure_future() and gather() take it like the coroutine an `async def` returns.
 *
 * serdes/awaitables.py falls back to a Python coroutine when this module is not built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *value; /* NULL once awaited, thrown into or closed */
} ReadyObject;

static PyTypeObject ReadyType;

static PyObject *
ready_new(PyObject *Py_UNUSED(module), PyObject *value)
{
    ReadyObject *self = PyObject_New(ReadyObject, &ReadyType);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(value);
    self->value = value;
    return (PyObject *)self;
}

static void
ready_dealloc(ReadyObject *self)
{
    Py_XDECREF(self->value);
    PyObject_Free(self);
}

/* Finish: raise StopIteration carrying the value, as a returning coroutine does. */
static PyObject *
ready_finish(ReadyObject *self)
{
    PyObject *value = self->value;
    if (value == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
        return NULL;
    }
    self->value = NULL;
    if (value == Py_None) {
        /* a plain StopIteration means None to await */
        Py_DECREF(value);
        PyErr_SetNone(PyExc_StopIteration);
        return NULL;
    }
    if (PyTuple_Check(value) || PyExceptionInstance_Check(value)) {
        /* StopIteration(value) itself: raising the type with a tuple would unpack it as arguments */
        PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
        Py_DECREF(value);
        if (stop == NULL) {
            return NULL;
        }
        PyErr_SetObject(PyExc_StopIteration, stop);
        Py_DECREF(stop);
        return NULL;
    }
    /* unnormalized: the interpreter takes the value without building the exception object */
    PyErr_SetObject(PyExc_StopIteration, value);
    Py_DECREF(value);
    return NULL;
}

static PyObject *
ready_await(ReadyObject *self)
{
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
ready_iternext(ReadyObject *self)
{
    return ready_finish(self);
}

/* The interpreter's `await` (SEND) asks this slot first on 3.10 and 3.11: the value is handed over without
   any exception. Newer interpreters call tp_iternext, which raises StopIteration(value). */
static PySendResult
ready_am_send(ReadyObject *self, PyObject *arg, PyObject **result)
{
    if (self->value == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "cannot reuse already awaited coroutine");
        *result = NULL;
        return PYGEN_ERROR;
    }
    if (arg != Py_None) {
        PyErr_SetString(PyExc_TypeError, "can't send non-None value to a just-started coroutine");
        *result = NULL;
        return PYGEN_ERROR;
    }
    *result = self->value; /* the reference passes to the caller */
    self->value = NULL;
    return PYGEN_RETURN;
}

static PyObject *
ready_send(ReadyObject *self, PyObject *arg)
{
    if (arg != Py_None && self->value != NULL) {
        PyErr_SetString(PyExc_TypeError, "can't send non-None value to a just-started coroutine");
        return NULL;
    }
    return ready_finish(self);
}

static PyObject *
ready_throw(ReadyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 3) {
        PyErr_Format(PyExc_TypeError, "throw expected 1 to 3 arguments, got %zd", nargs);
        return NULL;
    }
    Py_CLEAR(self->value); /* a coroutine that has not started ends with the exception thrown into it */
    PyObject *kind = args[0];
    PyObject *value = nargs > 1 ? args[1] : NULL;
    if (PyExceptionInstance_Check(kind)) {
        if (value != NULL && value != Py_None) {
            PyErr_SetString(PyExc_TypeError, "instance exception may not have a separate value");
            return NULL;
        }
        PyErr_SetObject((PyObject *)Py_TYPE(kind), kind);
        return NULL;
    }
    if (PyExceptionClass_Check(kind)) {
        if (value == Py_None) {
            value = NULL;
        }
        PyErr_SetObject(kind, value);
        return NULL;
    }
    PyErr_Format(PyExc_TypeError, "exceptions must be classes or instances deriving from BaseException, not %s",
                 Py_TYPE(kind)->tp_name);
    return NULL;
}

static PyObject *
ready_close(ReadyObject *self, PyObject *Py_UNUSED(ignored))
{
    Py_CLEAR(self->value);
    Py_RETURN_NONE;
}

static PyObject *
ready_repr(ReadyObject *self)
{
    return PyUnicode_FromFormat("<ready coroutine %s at %p>", self->value == NULL ? "finished" : "not awaited",
                                (void *)self);
}

static PyMethodDef ready_methods[] = {
    {"send", (PyCFunction)ready_send, METH_O, "send(None) finishes it: StopIteration carries the value."},
    {"throw", (PyCFunction)(void (*)(void))ready_throw, METH_FASTCALL, "throw(exc) raises exc; it is finished."},
    {"close", (PyCFunction)ready_close, METH_NOARGS, "close() finishes it without a value."},
    {NULL, NULL, 0, NULL},
};

static PyAsyncMethods ready_as_async = {
    .am_await = (unaryfunc)ready_await,
    .am_send = (sendfunc)ready_am_send,
};

static PyTypeObject ReadyType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "serdes._ready.Ready",
    .tp_basicsize = sizeof(ReadyObject),
    .tp_dealloc = (destructor)ready_dealloc,
    .tp_as_async = &ready_as_async,
    .tp_repr = (reprfunc)ready_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A coroutine that is finished at its first step; made by ready(value).",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)ready_iternext,
    .tp_methods = ready_methods,
};

static PyMethodDef module_methods[] = {
    {"ready", (PyCFunction)ready_new, METH_O, "ready(value) -> a coroutine that returns value when awaited."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "serdes._ready",
    .m_doc = "An already-finished coroutine, for async serializers' paths with nothing to await.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__ready(void)
{
    if (PyType_Ready(&ReadyType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL) {
        return NULL;
    }
    Py_INCREF(&ReadyType);
    if (PyModule_AddObject(module, "Ready", (PyObject *)&ReadyType) < 0) {
        Py_DECREF(&ReadyType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
